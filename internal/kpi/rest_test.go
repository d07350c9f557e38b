package kpi

import "testing"

func TestReturned(t *testing.T) {
	f := func(base, now uint64, subs int, want bool) {
		t.Helper()
		if got := Returned(base, now, subs); got != want {
			t.Errorf("Returned(%d, %d, %d) = %v, want %v", base, now, subs, got, want)
		}
	}
	f(15, 15, 0, true)
	f(15, 17, 0, true) // within the slack
	f(15, 18, 0, false)
	f(15, 10, 0, true)
	f(15, 15, 1, false) // a subscription still open
}
