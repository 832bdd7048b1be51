package reconcile

import (
	"context"
	"maps"
	"net/netip"
	"sync"
	"time"

	"github.com/novaedge/cpvip/internal/quietio"
)

// Event is a hint from the kernel that the interface changed.
type Event int

// The events a watcher sends.
const (
	AddrChanged Event = iota // an address of the interface was added or removed
	LinkUp                   // the interface came up (IPv6 addresses were flushed while down)
	LinkDown
)

// Hooks are the side effects a Loop runs around its steps, in its goroutine.
type Hooks struct {
	// Before runs before each step with the desired set (BGP withdraws the
	// routes of VIPs about to be removed). It may set a VIP desired for
	// this step to keep it bound (its route could not be withdrawn); not at
	// shutdown, where the speaker's stop takes every route with it.
	Before func(desired map[netip.Prefix]bool)
	// Changed sees every change a step made.
	Changed func(Change)
	// Stopping runs once at shutdown, after Before withdrew everything and
	// before the final step removes the VIPs (BGP stops its speaker here).
	Stopping func()
	// Reannounce runs after a step with VIPs that were held already and must
	// be announced again: all of them after the link came up, or the ones
	// asked for by Reannounce.
	Reannounce func(held []netip.Prefix, reason string)
	// Lapsed runs after a step found a held VIP's lifetime ran out (this
	// process did not run for that long). The loop no longer holds it; the
	// election, once it has read what it queued meanwhile, says Hold again
	// if this node is still to hold it.
	Lapsed func(vip netip.Prefix)
}

// Period is the daemon's periodic pass, which backs up the kernel's events.
const Period = 5 * time.Second

// Loop runs the reconcile step whenever the desired set changes, the kernel
// reports a change, and every period. One goroutine (Run) owns the
// Reconciler; or a driver of its own (internal/l2node) that calls Wake and
// Told itself, after the words it changes (Set, Hold, Again): their wake-up
// is Run's only.
type Loop struct {
	rec    *Reconciler
	events <-chan Event
	period time.Duration
	hooks  Hooks

	mu    sync.Mutex // guards words
	words *Words
	poke  chan struct{}
	// linkUp: the link came up and the held VIPs are still to be
	// announced again (a pass could not read the interface yet); the
	// goroutine that wakes the loop owns it.
	linkUp bool
}

// NewLoop returns a Loop over rec, woken by events and every period.
func NewLoop(rec *Reconciler, events <-chan Event, period time.Duration, hooks Hooks) *Loop {
	return &Loop{rec: rec, events: events, period: period, hooks: hooks, words: NewWords(), poke: make(chan struct{}, 1)}
}

// Set says whether vip should be held, and wakes the loop.
func (l *Loop) Set(vip netip.Prefix, hold bool) {
	l.mu.Lock()
	l.words.Set(vip, hold)
	l.mu.Unlock()
	l.wake()
}

// Hold makes vip desired and, in the same request, asks for it to be
// announced again after the next step if it was held already (a VIP bound by
// that step is announced as installed).
func (l *Loop) Hold(vip netip.Prefix) {
	l.mu.Lock()
	l.words.Hold(vip)
	l.mu.Unlock()
	l.wake()
}

// Again announces vip again if the election's latest word is still to
// hold it (a neighbour heard another router claim it), and says whether it
// is; it never makes a VIP wanted.
func (l *Loop) Again(vip netip.Addr) bool {
	l.mu.Lock()
	found := l.words.Again(vip)
	l.mu.Unlock()
	if found {
		l.wake()
	}
	return found
}

// Wanted says whether the election's latest word on vip is to hold it,
// which may not have reached a step yet.
func (l *Loop) Wanted(vip netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.words.Wanted(vip)
}

// Poke runs a pass soon without changing what is desired (a retry).
func (l *Loop) Poke() { l.wake() }

func (l *Loop) wake() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

// Run reconciles until ctx ends, then releases every VIP and returns.
func (l *Loop) Run(ctx context.Context) {
	t := quietio.NewTicker(l.period) // a timerfd: one wake-up a pass (quietio.Timer)
	defer t.Close()
	renew := quietio.NewTimer(time.Hour) // armed while a held VIP has a lifetime
	defer renew.Close()
	renewing := false
	for {
		if at := l.Wake(renewing); at.IsZero() {
			renew.Stop()
		} else {
			renew.Reset(time.Until(at))
		}
		renewing = false
		select {
		case <-ctx.Done():
			l.Release()
			return
		case <-l.poke:
		case <-renew.C():
			renewing = true
		case <-t.C():
		case ev, ok := <-l.events:
			if !ok {
				l.events = nil
			}
			l.Told(ev)
		}
	}
}

// Told takes a kernel event: after the link came up every held VIP is
// announced again (the next pass that can read the interface). Called by
// the goroutine that wakes the loop.
func (l *Loop) Told(ev Event) {
	if ev == LinkUp {
		l.linkUp = true
	}
}

// Wake runs what is due when the loop wakes: a pass; when only the
// lifetimes' renewal woke it (renewing), the renewal alone if that
// suffices (renew). It returns when the renewal is due next; zero: none.
// Run calls it; a driver of its own (the simulation) may, from one
// goroutine.
func (l *Loop) Wake(renewing bool) time.Time {
	if !renewing || !l.renew() {
		l.linkUp = l.pass(l.linkUp)
	}
	return l.rec.RenewAt()
}

// pass is one pass: it takes the election's words, runs the Before hook
// and the step, lets go of the VIPs whose lifetime ran out, and announces
// again what was asked (all held VIPs with linkUp: the link came up). It
// returns whether linkUp is still to announce (the pass could not read the
// interface). Wake calls it.
func (l *Loop) pass(linkUp bool) bool {
	desired, again := l.snapshot()
	changes := l.apply(desired)
	l.lapse(changes)
	return l.reannounce(desired, again, changes, linkUp)
}

// renew renews the lifetimes due, without a pass over the interface's
// addresses (half the system calls and garbage of a pass, twice a second
// on the holder), reporting failures; false when a pass is needed instead
// (a VIP's lifetime may have run out: only a pass, which reads the
// interface, tells; or the election let go of a VIP still held: only a
// pass removes it). It renews with the election's latest word.
func (l *Loop) renew() bool {
	l.mu.Lock()
	wanted := l.words.Held()
	l.mu.Unlock()
	changes, ok := l.rec.Renew(wanted)
	if !ok {
		return false
	}
	if l.hooks.Changed != nil {
		for _, c := range changes {
			l.hooks.Changed(c)
		}
	}
	return true
}

// lapse lets go of the VIPs whose lifetime ran out: only a new Hold binds
// them again.
func (l *Loop) lapse(changes []Change) {
	for _, c := range changes {
		if c.Action != Lapsed {
			continue
		}
		l.mu.Lock()
		l.words.Lapsed(c.VIP)
		l.mu.Unlock()
		if l.hooks.Lapsed != nil {
			l.hooks.Lapsed(c.VIP)
		}
	}
}

func (l *Loop) apply(desired map[netip.Prefix]bool) []Change {
	if l.hooks.Before != nil {
		l.hooks.Before(desired)
	}
	return l.step(desired)
}

func (l *Loop) step(desired map[netip.Prefix]bool) []Change {
	changes := l.rec.Step(desired)
	if l.hooks.Changed != nil {
		for _, c := range changes {
			l.hooks.Changed(c)
		}
	}
	return changes
}

// Release removes every owned VIP at shutdown, whatever the election's
// words; one retry if the kernel call failed. Run calls it as its context
// ends; a driver of its own (internal/l2node) as the node shuts down.
func (l *Loop) Release() {
	l.mu.Lock()
	for _, vip := range l.rec.owned {
		l.words.Set(vip, false)
	}
	l.mu.Unlock()
	desired, _ := l.snapshot()
	if l.hooks.Before != nil {
		l.hooks.Before(maps.Clone(desired))
	}
	if l.hooks.Stopping != nil {
		l.hooks.Stopping()
	}
	for range 2 {
		if !hasFailure(l.step(desired)) {
			return
		}
	}
}

// snapshot copies the desired set and takes the re-announce requests.
func (l *Loop) snapshot() (desired, again map[netip.Prefix]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.words.Take()
}

// reannounce calls the hook with what the pass announces again. A pass
// that could not read the interface leaves the requests to the next one:
// it returns linkUp still pending and puts again back.
func (l *Loop) reannounce(desired, again map[netip.Prefix]bool, changes []Change, linkUp bool) (pending bool) {
	if l.hooks.Reannounce == nil || (!linkUp && len(again) == 0) {
		return false
	}
	held, ok := l.rec.ToAnnounce(desired, again, changes, linkUp)
	if !ok {
		l.mu.Lock()
		l.words.Return(again)
		l.mu.Unlock()
		return linkUp
	}
	if len(held) > 0 {
		reason := "asked"
		if linkUp {
			reason = "link up"
		}
		l.hooks.Reannounce(held, reason)
	}
	return false
}

func hasFailure(changes []Change) bool {
	for _, c := range changes {
		if c.Action == Failed {
			return true
		}
	}
	return false
}
