// Package failsig records the first reason something stopped (a target's
// server failed, its process died) and closes a channel once, so any
// number of watchers see it.
package failsig

import "sync"

// Signal is the first reason recorded by Set and a channel closed then.
// Make one with New.
type Signal struct {
	once sync.Once
	mu   sync.Mutex
	ch   chan struct{}
	err  error
}

// New returns a Signal that has not fired.
func New() *Signal { return &Signal{ch: make(chan struct{})} }

// Set records err as the reason, the first time only, and closes Done.
func (s *Signal) Set(err error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.ch)
	})
}

// Done is closed once Set has been called.
func (s *Signal) Done() <-chan struct{} { return s.ch }

// Err is the reason Set recorded; nil before.
func (s *Signal) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
