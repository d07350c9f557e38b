package donut

import "strconv"

// Flavor is a donut flavour. Its values are the GraphQL enum values, so the
// same string travels unchanged through both the GraphQL and the REST arm.
type Flavor string

// The three flavours a donut can have; any other value is invalid.
const (
	// Vanilla is the VANILLA flavour.
	Vanilla Flavor = "VANILLA"
	// Strawberry is the STRAWBERRY flavour.
	Strawberry Flavor = "STRAWBERRY"
	// Chocolate is the CHOCOLATE flavour.
	Chocolate Flavor = "CHOCOLATE"
)

// Valid reports whether f is one of Vanilla, Strawberry or Chocolate.
func (f Flavor) Valid() bool {
	switch f {
	case Vanilla, Strawberry, Chocolate:
		return true
	}
	return false
}

// Donut is the single object served by both arms. Its JSON keys are the
// GraphQL field names, so REST and GraphQL payloads have the same shape.
type Donut struct {
	// ID identifies the donut; seeded donuts use "1".."n".
	ID string `json:"id"`
	// Name is a free-form, non-empty display name.
	Name string `json:"name"`
	// Flavor is the donut's flavour; callers validate it with Flavor.Valid.
	Flavor Flavor `json:"flavor"`
}

// SeedID returns the id of the i-th seeded donut, strconv.Itoa(i), for i in
// 1..n. Load drivers use it to pick ids that are known to exist.
func SeedID(i int) string {
	return strconv.Itoa(i)
}

// SeedDonut returns the i-th seeded donut: id SeedID(i), name "donut-<i>" and
// a flavour chosen by i%3 (0 Vanilla, 1 Strawberry, 2 Chocolate). It is
// deterministic so that drivers can assert the flavour a query returns without
// asking the server first.
func SeedDonut(i int) Donut {
	id := SeedID(i)
	var f Flavor
	switch i % 3 {
	case 0:
		f = Vanilla
	case 1, -1:
		f = Strawberry
	default:
		f = Chocolate
	}
	return Donut{ID: id, Name: "donut-" + id, Flavor: f}
}
