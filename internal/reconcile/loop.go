package reconcile

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// Event is a hint from the kernel that the interface changed.
type Event int

// The events a watcher sends.
const (
	AddrChanged Event = iota // an address of the interface was added or removed
	LinkUp                   // the interface came up (IPv6 addresses were flushed while down)
	LinkDown
)

// Hooks are the side effects a Loop runs after its steps.
type Hooks struct {
	// Changed sees every change a step made.
	Changed func(Change)
	// LinkUp runs after the step that follows the link coming up, with the VIPs then held.
	LinkUp func(held []netip.Prefix)
}

// Loop runs the reconcile step whenever the desired set changes, the kernel
// reports a change, and every period. One goroutine (Run) owns the Reconciler.
type Loop struct {
	rec    *Reconciler
	events <-chan Event
	period time.Duration
	hooks  Hooks

	mu      sync.Mutex
	desired map[netip.Prefix]bool
	poke    chan struct{}
}

// NewLoop returns a Loop over rec, woken by events and every period.
func NewLoop(rec *Reconciler, events <-chan Event, period time.Duration, hooks Hooks) *Loop {
	return &Loop{rec: rec, events: events, period: period, hooks: hooks,
		desired: map[netip.Prefix]bool{}, poke: make(chan struct{}, 1)}
}

// Set says whether vip should be held, and wakes the loop.
func (l *Loop) Set(vip netip.Prefix, hold bool) {
	l.mu.Lock()
	l.desired[vip] = hold
	l.mu.Unlock()
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

// Run reconciles until ctx ends, then releases every VIP and returns.
func (l *Loop) Run(ctx context.Context) {
	t := time.NewTicker(l.period)
	defer t.Stop()
	linkUp := false
	for {
		desired := l.snapshot()
		l.apply(desired)
		if linkUp && l.hooks.LinkUp != nil {
			l.hooks.LinkUp(heldOf(desired))
		}
		linkUp = false
		select {
		case <-ctx.Done():
			l.releaseAll()
			return
		case <-l.poke:
		case <-t.C:
		case ev, ok := <-l.events:
			if !ok {
				l.events = nil
			}
			linkUp = ev == LinkUp
		}
	}
}

func (l *Loop) apply(desired map[netip.Prefix]bool) []Change {
	changes := l.rec.Step(desired)
	if l.hooks.Changed != nil {
		for _, c := range changes {
			l.hooks.Changed(c)
		}
	}
	return changes
}

// releaseAll removes every owned VIP; one retry if the kernel call failed.
func (l *Loop) releaseAll() {
	l.mu.Lock()
	for _, vip := range l.rec.owned {
		l.desired[vip] = false
	}
	l.mu.Unlock()
	for range 2 {
		if !hasFailure(l.apply(l.snapshot())) {
			return
		}
	}
}

func (l *Loop) snapshot() map[netip.Prefix]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[netip.Prefix]bool, len(l.desired))
	for k, v := range l.desired {
		out[k] = v
	}
	return out
}

func heldOf(desired map[netip.Prefix]bool) []netip.Prefix {
	var out []netip.Prefix
	for p, hold := range desired {
		if hold {
			out = append(out, p)
		}
	}
	return out
}

func hasFailure(changes []Change) bool {
	for _, c := range changes {
		if c.Action == Failed {
			return true
		}
	}
	return false
}
