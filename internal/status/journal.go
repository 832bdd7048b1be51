package status

import (
	"sync"
	"time"
)

// journalSize is how many transitions /status keeps.
const journalSize = 32

// Journal keeps the last transitions and counts every transition by kind.
type Journal struct {
	mu     sync.Mutex
	recent []Transition
	counts map[string]uint64
	now    func() time.Time
}

// NewJournal returns an empty journal stamping entries with now.
func NewJournal(now func() time.Time) *Journal {
	return &Journal{counts: map[string]uint64{}, now: now}
}

// Add records a transition to "to" (held, released, healthy, unhealthy).
func (j *Journal) Add(to, vip, reason string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.counts[to]++
	j.recent = append(j.recent, Transition{At: j.now(), To: to, VIP: vip, Reason: reason})
	if len(j.recent) > journalSize {
		j.recent = j.recent[len(j.recent)-journalSize:]
	}
}

// Recent returns the kept transitions, oldest first.
func (j *Journal) Recent() []Transition {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Transition(nil), j.recent...)
}

// Counts returns the number of transitions by kind.
func (j *Journal) Counts() map[string]uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make(map[string]uint64, len(j.counts))
	for k, v := range j.counts {
		out[k] = v
	}
	return out
}
