package donut

import (
	"sync"
	"testing"
)

func TestBrokerDeliversOnlyMatchingIDs(t *testing.T) {
	b := NewBroker(8)
	ev1, cancel1 := b.Subscribe("1")
	defer cancel1()
	ev2, cancel2 := b.Subscribe("2")
	defer cancel2()

	b.Publish(Donut{ID: "1", Name: "a", Flavor: Vanilla})
	b.Publish(Donut{ID: "3", Name: "nobody", Flavor: Vanilla})
	b.Publish(Donut{ID: "1", Name: "b", Flavor: Chocolate})
	b.Publish(Donut{ID: "2", Name: "c", Flavor: Strawberry})

	drain := func(ch <-chan Donut) []string {
		var names []string
		for {
			select {
			case d := <-ch:
				names = append(names, d.ID+":"+d.Name)
			default:
				return names
			}
		}
	}
	f := func(name string, got, want []string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: got %v, want %v", name, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: got %v, want %v", name, got, want)
			}
		}
	}
	f("subscriber of 1", drain(ev1), []string{"1:a", "1:b"})
	f("subscriber of 2", drain(ev2), []string{"2:c"})

	want := BrokerStats{Subscribers: 2, Published: 4, Delivered: 3, Dropped: 0}
	if got := b.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

func TestBrokerCountsDrops(t *testing.T) {
	b := NewBroker(2)
	slow, cancelSlow := b.Subscribe("7")
	defer cancelSlow()
	fast, cancelFast := b.Subscribe("7")
	defer cancelFast()

	const n = 5
	for i := range n {
		b.Publish(Donut{ID: "7", Name: SeedID(i), Flavor: Vanilla})
		<-fast // the fast subscriber keeps up and never loses an event
	}
	want := BrokerStats{Subscribers: 2, Published: n, Delivered: n + 2, Dropped: n - 2}
	if got := b.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	// The slow subscriber kept the first two events, in order.
	for _, wantName := range []string{"0", "1"} {
		if got := <-slow; got.Name != wantName {
			t.Errorf("slow subscriber got %q, want %q", got.Name, wantName)
		}
	}
}

func TestBrokerDefaultBuffer(t *testing.T) {
	b := NewBroker(0)
	ch, cancel := b.Subscribe("1")
	defer cancel()
	if got := cap(ch); got != DefaultSubscriberBuffer {
		t.Errorf("cap = %d, want %d", got, DefaultSubscriberBuffer)
	}
}

func TestBrokerCancel(t *testing.T) {
	b := NewBroker(1)
	ch, cancel := b.Subscribe("1")
	other, cancelOther := b.Subscribe("1")
	defer cancelOther()
	if got := b.Stats().Subscribers; got != 2 {
		t.Fatalf("Subscribers = %d, want 2", got)
	}
	cancel()
	cancel() // idempotent
	if _, ok := <-ch; ok {
		t.Errorf("channel still open after cancel")
	}
	if got := b.Stats().Subscribers; got != 1 {
		t.Errorf("Subscribers after cancel = %d, want 1", got)
	}
	b.Publish(Donut{ID: "1"})
	if got, want := b.Stats(), (BrokerStats{Subscribers: 1, Published: 1, Delivered: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v (cancelled subscriber must not count)", got, want)
	}
	if got := len(other); got != 1 {
		t.Errorf("remaining subscriber has %d events, want 1", got)
	}
	cancelOther()
	if got := len(b.subs); got != 0 {
		t.Errorf("broker keeps %d empty id sets, want 0", got)
	}
}

// TestBrokerConcurrent runs publishers, subscribers and cancels at once; it is
// meant for -race. Subscribers cancel themselves part-way and are cancelled
// again from outside (cancel is idempotent); a ranging subscriber drains its
// buffer after the close, so the events received must equal Delivered.
func TestBrokerConcurrent(t *testing.T) {
	b := NewBroker(4)
	ids := []string{"1", "2", "3"}
	const (
		publishers   = 4
		perPublisher = 300
		subscribers  = 6
	)

	var (
		mu       sync.Mutex
		received uint64
		cancels  []func()
		subs     sync.WaitGroup
		pubs     sync.WaitGroup
	)
	start := make(chan struct{})
	for s := range subscribers {
		id := ids[s%len(ids)]
		events, cancel := b.Subscribe(id)
		cancels = append(cancels, cancel)
		subs.Go(func() {
			<-start
			var n uint64
			for d := range events {
				if d.ID != id {
					t.Errorf("subscriber of %q got id %q", id, d.ID)
				}
				n++
				if n == 50 {
					cancel() // mid-stream, while publishers are still sending
				}
			}
			mu.Lock()
			received += n
			mu.Unlock()
		})
	}
	pubs.Go(func() { // short-lived subscriptions churning during publishing
		<-start
		for i := range 200 {
			events, cancel := b.Subscribe(ids[i%len(ids)])
			cancel()
			var n uint64
			for range events { // whatever arrived before the cancel
				n++
			}
			mu.Lock()
			received += n
			mu.Unlock()
		}
	})
	for p := range publishers {
		pubs.Go(func() {
			<-start
			for i := range perPublisher {
				b.Publish(Donut{ID: ids[(p+i)%len(ids)], Name: "x", Flavor: Vanilla})
			}
		})
	}
	close(start)
	pubs.Wait()
	for _, cancel := range cancels {
		cancel()
	}
	subs.Wait()

	st := b.Stats()
	if st.Subscribers != 0 {
		t.Errorf("Subscribers = %d, want 0", st.Subscribers)
	}
	if got, want := st.Published, uint64(publishers*perPublisher); got != want {
		t.Errorf("Published = %d, want %d", got, want)
	}
	if received != st.Delivered {
		t.Errorf("subscribers received %d events, want Delivered = %d", received, st.Delivered)
	}
}
