package main

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Book is one book of the store. Values are immutable once stored: an
// update stores a new Book, so readers may keep one without a lock.
type Book struct {
	ID       string
	Title    string
	Pages    int
	AuthorID string
}

// Author is one author of the store; the set of authors is fixed.
type Author struct {
	ID   string
	Name string
}

// seedAuthors are the store's authors: seeded book i is by author i mod 3,
// so a client can derive a seeded book's author from its id.
func seedAuthors() []Author {
	return []Author{
		{ID: "a0", Name: "Ursula K. Le Guin"},
		{ID: "a1", Name: "Italo Calvino"},
		{ID: "a2", Name: "Jorge Luis Borges"},
	}
}

// store holds the books, shared by GraphQL and the REST twin, and raises one
// event per successful write on the broker.
type store struct {
	authors []Author // fixed
	broker  *broker

	mu    sync.RWMutex
	books map[string]Book
}

// newStore returns a store seeded with books "1" … n: book i is titled
// "Book i", has 100 + i mod 400 pages and is by author i mod 3.
func newStore(n int, b *broker) *store {
	s := &store{authors: seedAuthors(), books: make(map[string]Book, n), broker: b}
	for i := 1; i <= n; i++ {
		id := strconv.Itoa(i)
		s.books[id] = Book{ID: id, Title: "Book " + id, Pages: 100 + i%400, AuthorID: s.authors[i%len(s.authors)].ID}
	}
	return s
}

// book returns the book id, if any.
func (s *store) book(id string) (Book, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.books[id]
	return b, ok
}

// author returns the author id, if any.
func (s *store) author(id string) (Author, bool) {
	for _, a := range s.authors {
		if a.ID == id {
			return a, true
		}
	}
	return Author{}, false
}

// update creates or replaces book id with title, pages and, when authorID is
// not empty, that author (else the book keeps its author, or gets the first
// one when new), then publishes the stored book to its subscribers.
func (s *store) update(id, title string, pages int, authorID string) (Book, error) {
	if id == "" || title == "" {
		return Book{}, errors.New("id and title must not be empty")
	}
	if pages < 0 {
		return Book{}, fmt.Errorf("pages must not be negative, got %d", pages)
	}
	if authorID != "" {
		if _, ok := s.author(authorID); !ok {
			return Book{}, fmt.Errorf("no author %q", authorID)
		}
	}
	s.mu.Lock()
	old, ok := s.books[id]
	switch {
	case authorID != "":
	case ok:
		authorID = old.AuthorID
	default:
		authorID = s.authors[0].ID
	}
	b := Book{ID: id, Title: title, Pages: pages, AuthorID: authorID}
	s.books[id] = b
	s.mu.Unlock()
	s.broker.publish(b)
	return b, nil
}

// broker delivers each stored book to the subscriptions on its id.
type broker struct {
	mu      sync.Mutex
	subs    map[string]map[chan Book]struct{}
	dropped func() // counts an event dropped on a full subscription buffer
}

func newBroker(dropped func()) *broker {
	return &broker{subs: make(map[string]map[chan Book]struct{}), dropped: dropped}
}

// subscribeBuffer is the events a subscription holds before its client has
// read them: past it events are dropped (and counted), never blocking a
// writer. 256 covers a second of one writer's updates at the example's load.
const subscribeBuffer = 256

// subscribe returns a channel of the updates of book id and the function
// that ends the subscription.
func (b *broker) subscribe(id string) (<-chan Book, func()) {
	ch := make(chan Book, subscribeBuffer)
	b.mu.Lock()
	if b.subs[id] == nil {
		b.subs[id] = make(map[chan Book]struct{})
	}
	b.subs[id][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs[id], ch)
		if len(b.subs[id]) == 0 {
			delete(b.subs, id)
		}
		b.mu.Unlock()
	}
}

// publish hands bk to every subscription on its id without blocking.
func (b *broker) publish(bk Book) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[bk.ID] {
		select {
		case ch <- bk:
		default:
			b.dropped()
		}
	}
}
