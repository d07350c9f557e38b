package donut

import "sync"

// Store is a concurrency-safe in-memory map of donuts keyed by id. Reads take a
// shared lock, so concurrent queries do not serialise behind each other.
type Store struct {
	mu     sync.RWMutex
	donuts map[string]Donut
}

// NewStore returns a store seeded with SeedDonut(1)..SeedDonut(n). A
// non-positive n gives an empty store.
func NewStore(n int) *Store {
	s := &Store{donuts: make(map[string]Donut, max(n, 0))}
	for i := 1; i <= n; i++ {
		d := SeedDonut(i)
		s.donuts[d.ID] = d
	}
	return s
}

// Get returns a copy of the donut with the given id and whether it exists.
func (s *Store) Get(id string) (Donut, bool) {
	s.mu.RLock()
	d, ok := s.donuts[id]
	s.mu.RUnlock()
	return d, ok
}

// Put inserts d, or replaces the donut with the same id. It does not validate
// d; callers do.
func (s *Store) Put(d Donut) {
	s.mu.Lock()
	s.donuts[d.ID] = d
	s.mu.Unlock()
}

// Len returns the number of donuts currently stored.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.donuts)
}
