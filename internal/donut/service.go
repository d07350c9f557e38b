package donut

// Service is the domain operation both arms call, so that GraphQL and REST do
// identical domain work per request and only the API layer differs.
type Service struct {
	// Store holds the donuts.
	Store *Store
	// Broker carries update events to subscribers.
	Broker *Broker
}

// Update stores d, publishes it to the subscribers of d.ID and returns the
// stored value. It validates nothing: callers validate the flavour and name
// first, so that each arm reports invalid input in its own protocol.
func (s *Service) Update(d Donut) Donut {
	s.Store.Put(d)
	s.Broker.Publish(d)
	return d
}
