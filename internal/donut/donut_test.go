package donut

import (
	"fmt"
	"sync"
	"testing"
)

func TestFlavorValid(t *testing.T) {
	tests := []struct {
		f    Flavor
		want bool
	}{
		{Vanilla, true},
		{Strawberry, true},
		{Chocolate, true},
		{"", false},
		{"vanilla", false},
		{"MINT", false},
	}
	for _, tt := range tests {
		if got := tt.f.Valid(); got != tt.want {
			t.Errorf("Flavor(%q).Valid() = %v, want %v", tt.f, got, tt.want)
		}
	}
}

func TestSeedDonut(t *testing.T) {
	tests := []struct {
		i    int
		want Donut
	}{
		{1, Donut{ID: "1", Name: "donut-1", Flavor: Strawberry}},
		{2, Donut{ID: "2", Name: "donut-2", Flavor: Chocolate}},
		{3, Donut{ID: "3", Name: "donut-3", Flavor: Vanilla}},
		{100, Donut{ID: "100", Name: "donut-100", Flavor: Strawberry}},
	}
	for _, tt := range tests {
		if got := SeedDonut(tt.i); got != tt.want {
			t.Errorf("SeedDonut(%d) = %+v, want %+v", tt.i, got, tt.want)
		}
		if got := SeedID(tt.i); got != tt.want.ID {
			t.Errorf("SeedID(%d) = %q, want %q", tt.i, got, tt.want.ID)
		}
		if !SeedDonut(tt.i).Flavor.Valid() {
			t.Errorf("SeedDonut(%d) has invalid flavour", tt.i)
		}
	}
}

func TestStore(t *testing.T) {
	s := NewStore(10)
	if got, want := s.Len(), 10; got != want {
		t.Fatalf("Len() = %d, want %d", got, want)
	}
	for i := 1; i <= 10; i++ {
		got, ok := s.Get(SeedID(i))
		if !ok || got != SeedDonut(i) {
			t.Errorf("Get(%q) = %+v, %v, want %+v, true", SeedID(i), got, ok, SeedDonut(i))
		}
	}
	if got, ok := s.Get("11"); ok {
		t.Errorf("Get(\"11\") = %+v, true, want not found", got)
	}
	d := Donut{ID: "3", Name: "renamed", Flavor: Chocolate}
	s.Put(d)
	if got, _ := s.Get("3"); got != d {
		t.Errorf("after Put, Get(\"3\") = %+v, want %+v", got, d)
	}
	s.Put(Donut{ID: "new", Name: "n", Flavor: Vanilla})
	if got, want := s.Len(), 11; got != want {
		t.Errorf("after inserting, Len() = %d, want %d", got, want)
	}
	if got := NewStore(-1).Len(); got != 0 {
		t.Errorf("NewStore(-1).Len() = %d, want 0", got)
	}
}

func TestStoreConcurrent(t *testing.T) {
	s := NewStore(5)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id := SeedID(i%5 + 1)
				s.Put(Donut{ID: id, Name: fmt.Sprintf("w%d-%d", w, i), Flavor: Vanilla})
				if _, ok := s.Get(id); !ok {
					t.Errorf("Get(%q) not found during concurrent writes", id)
					return
				}
				_ = s.Len()
			}
		})
	}
	wg.Wait()
	if got, want := s.Len(), 5; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
}

func TestServiceUpdate(t *testing.T) {
	svc := &Service{Store: NewStore(3), Broker: NewBroker(4)}
	events, cancel := svc.Broker.Subscribe("2")
	defer cancel()

	in := Donut{ID: "2", Name: "glazed", Flavor: Vanilla}
	if got := svc.Update(in); got != in {
		t.Errorf("Update() = %+v, want %+v", got, in)
	}
	if got, _ := svc.Store.Get("2"); got != in {
		t.Errorf("store has %+v, want %+v", got, in)
	}
	select {
	case got := <-events:
		if got != in {
			t.Errorf("event = %+v, want %+v", got, in)
		}
	default:
		t.Errorf("no event published")
	}
}
