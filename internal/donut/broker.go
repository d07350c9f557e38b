package donut

import (
	"sync"
	"sync/atomic"
)

// DefaultSubscriberBuffer is the per-subscriber channel capacity NewBroker uses
// when asked for a non-positive one. 64 events absorb short stalls of a
// websocket writer without dropping, while bounding memory per subscriber.
const DefaultSubscriberBuffer = 64

// BrokerStats is a snapshot of a Broker's counters. Published, Delivered and
// Dropped are cumulative since NewBroker; Subscribers is the current count.
// Every event offered to a matching subscriber is either Delivered or Dropped,
// so nothing is lost silently.
type BrokerStats struct {
	// Subscribers is the number of subscriptions not yet cancelled.
	Subscribers int `json:"subscribers"`
	// Published is the number of Publish calls.
	Published uint64 `json:"published"`
	// Delivered is the number of events placed in a subscriber's buffer.
	Delivered uint64 `json:"delivered"`
	// Dropped is the number of events discarded because a subscriber's buffer
	// was full.
	Dropped uint64 `json:"dropped"`
}

// subscriber is one subscription's buffered channel. It is only sent on and
// closed while the broker's lock is held (shared for sends, exclusive for the
// close), so a send can never race a close.
type subscriber struct {
	ch chan Donut
}

// Broker fans donut update events out to the subscribers of the updated id.
// Publish never blocks: a subscriber whose buffer is full misses the event and
// the miss is counted in BrokerStats.Dropped. The zero value is not usable;
// call NewBroker.
type Broker struct {
	buffer int

	mu   sync.RWMutex
	subs map[string]map[*subscriber]struct{} // guarded by mu
	n    int                                 // number of subscribers, guarded by mu

	published atomic.Uint64
	delivered atomic.Uint64
	dropped   atomic.Uint64
}

// NewBroker returns a broker whose subscribers each get a channel of capacity
// buffer events; a non-positive buffer means DefaultSubscriberBuffer.
func NewBroker(buffer int) *Broker {
	if buffer <= 0 {
		buffer = DefaultSubscriberBuffer
	}
	return &Broker{buffer: buffer, subs: make(map[string]map[*subscriber]struct{})}
}

// Subscribe registers interest in updates of the donut with the given id. The
// returned channel receives those updates in publication order (per
// publisher) until cancel is called, which unregisters the subscription and
// closes the channel. cancel is idempotent and safe to call concurrently with
// Publish: the close happens under the broker's exclusive lock, so no
// publisher can be sending at that moment. Callers must call cancel when done,
// or the subscription stays registered.
func (b *Broker) Subscribe(id string) (events <-chan Donut, cancel func()) {
	s := &subscriber{ch: make(chan Donut, b.buffer)}

	b.mu.Lock()
	set, ok := b.subs[id]
	if !ok {
		set = make(map[*subscriber]struct{})
		b.subs[id] = set
	}
	set[s] = struct{}{}
	b.n++
	b.mu.Unlock()

	var once sync.Once
	cancel = func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			set := b.subs[id]
			delete(set, s)
			if len(set) == 0 {
				delete(b.subs, id)
			}
			b.n--
			close(s.ch)
		})
	}
	return s.ch, cancel
}

// Publish offers d to every current subscriber of d.ID without blocking. An
// event that does not fit in a subscriber's buffer is dropped for that
// subscriber and counted. Concurrent publishers only share a read lock.
func (b *Broker) Publish(d Donut) {
	b.published.Add(1)
	var delivered, dropped uint64
	b.mu.RLock()
	for s := range b.subs[d.ID] {
		select {
		case s.ch <- d:
			delivered++
		default:
			dropped++
		}
	}
	b.mu.RUnlock()
	if delivered > 0 {
		b.delivered.Add(delivered)
	}
	if dropped > 0 {
		b.dropped.Add(dropped)
	}
}

// Stats returns a snapshot of the broker's counters. The counters are read
// one after another, so under concurrent publishing they may be a few events
// apart from each other.
func (b *Broker) Stats() BrokerStats {
	b.mu.RLock()
	n := b.n
	b.mu.RUnlock()
	return BrokerStats{
		Subscribers: n,
		Published:   b.published.Load(),
		Delivered:   b.delivered.Load(),
		Dropped:     b.dropped.Load(),
	}
}
