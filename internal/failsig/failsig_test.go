package failsig

import (
	"errors"
	"testing"
)

func TestFirstReasonWins(t *testing.T) {
	s := New()
	select {
	case <-s.Done():
		t.Fatal("Done closed before Set")
	default:
	}
	if s.Err() != nil {
		t.Fatalf("Err before Set = %v, want nil", s.Err())
	}
	first := errors.New("first")
	s.Set(first)
	s.Set(errors.New("second"))
	<-s.Done()
	if s.Err() != first {
		t.Fatalf("Err = %v, want %v", s.Err(), first)
	}
}
