package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// epoch is the virtual clock's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is the virtual clock and what everything shares: the event queue,
// the seeded randomness and the trace. One goroutine runs it.
type world struct {
	now   time.Time
	q     queue
	seq   uint64
	rng   *rand.Rand
	trace []string
	// events counts the events run.
	events int
}

func newWorld(seed uint64) *world {
	return &world{now: epoch, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// event is something due at a virtual time; equal times run in the order
// they were scheduled.
type event struct {
	at   time.Time
	seq  uint64
	what string
	do   func()
}

// at schedules do at t (not before now).
func (w *world) at(t time.Time, what string, do func()) {
	if t.Before(w.now) {
		t = w.now
	}
	w.seq++
	heap.Push(&w.q, &event{at: t, seq: w.seq, what: what, do: do})
}

// after schedules do d from now.
func (w *world) after(d time.Duration, what string, do func()) { w.at(w.now.Add(d), what, do) }

// runUntil runs the events due until end, calling check after each; it
// stops early when check returns an error, and returns it.
func (w *world) runUntil(end time.Time, check func() error) error {
	for w.q.Len() > 0 {
		e := w.q[0]
		if e.at.After(end) {
			break
		}
		heap.Pop(&w.q)
		w.now = e.at
		w.events++
		e.do()
		if err := check(); err != nil {
			return err
		}
	}
	w.now = end
	return nil
}

// since is a virtual time as seconds from the start, for the trace.
func (w *world) since(t time.Time) string { return fmt.Sprintf("%8.3f", t.Sub(epoch).Seconds()) }

// logf adds a line to the trace.
func (w *world) logf(format string, args ...any) {
	w.trace = append(w.trace, w.since(w.now)+" "+fmt.Sprintf(format, args...))
}

// tail returns the trace's last n lines.
func (w *world) tail(n int) string {
	from := max(0, len(w.trace)-n)
	return strings.Join(w.trace[from:], "\n")
}

// chance says yes with probability p.
func (w *world) chance(p float64) bool { return p > 0 && w.rng.Float64() < p }

// between returns a duration in [lo, hi].
func (w *world) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)+1))
}

type queue []*event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
