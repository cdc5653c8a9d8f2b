package store

import "sync"

// Memo remembers the results of reads until the Store's next write
// (WriteGeneration), so a read repeated with nothing written in between
// costs a map lookup instead of a statement. It holds at most max keys
// (all are dropped when a new one would exceed it). Values are shared
// between callers, who must not modify them. The zero value is not usable;
// see NewMemo.
type Memo[K comparable, V any] struct {
	mu  sync.Mutex
	m   map[K]memoEntry[V]
	max int
}

type memoEntry[V any] struct {
	gen uint64
	v   V
}

// NewMemo returns a Memo of at most max keys.
func NewMemo[K comparable, V any](max int) *Memo[K, V] {
	return &Memo[K, V]{m: map[K]memoEntry[V]{}, max: max}
}

// Get returns what load returned for key if nothing was written through s
// since, or calls load. The generation is read before load runs, so a
// write that commits during load leaves the entry stale at once. A
// read-only Store (generation 0, another process may write) is never
// remembered.
func (m *Memo[K, V]) Get(s *Store, key K, load func() (V, error)) (V, error) {
	gen := s.WriteGeneration()
	if gen != 0 {
		m.mu.Lock()
		e, ok := m.m[key]
		m.mu.Unlock()
		if ok && e.gen == gen {
			return e.v, nil
		}
	}
	v, err := load()
	if err != nil || gen == 0 {
		return v, err
	}
	m.mu.Lock()
	if _, ok := m.m[key]; !ok && len(m.m) >= m.max {
		clear(m.m)
	}
	m.m[key] = memoEntry[V]{gen: gen, v: v}
	m.mu.Unlock()
	return v, nil
}
