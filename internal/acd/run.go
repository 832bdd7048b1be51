package acd

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// refreshEvery is how often the probes' rounds look up our group's members'
// addresses ahead of need (a stranger's answer looks them up at once).
const refreshEvery = 10 * time.Second

// ReopenEvery is the pause before opening a wire again after it failed
// (an IPv6 link-local address in duplicate address detection takes a second
// or two after link up).
const ReopenEvery = 250 * time.Millisecond

// UncheckedAfter is how long a wire may fail to open before its VIP is bound
// without the check: a fault in the check must not keep the VIP down.
const UncheckedAfter = 10 * time.Second

// Listen opens each VIP's wire and reads who claims it (a reader a VIP)
// until ctx ends, then closes the wires and returns once the readers
// have. The rounds are its driver's (Start, Round when the round is due
// or Woken receives: internal/l2node).
func (g *Guard) Listen(ctx context.Context) {
	var readers sync.WaitGroup
	for vip := range g.vips {
		readers.Add(1)
		go func() { defer readers.Done(); g.listen(ctx, vip) }()
	}
	<-ctx.Done()
	g.closeWires()
	readers.Wait()
}

// Woken receives when the guard asks for a round before the time Round
// returned (an answer observed, a word or a question to act on, the link
// changed): its driver rounds when it receives.
func (g *Guard) Woken() <-chan struct{} { return g.wake }

// Start begins the check: it settles from now on (Guard.Settle); its
// first round is due at once.
func (g *Guard) Start() {
	g.mu.Lock()
	g.started = g.now()
	g.mu.Unlock()
}

// Round settles the waits that are over (settleWaiting), counts each
// VIP's latest probe whose answer wait is over, sends the probes that are
// due and returns when the next thing is due: a probe, the end of a wait,
// or the end of a blocked VIP's answer wait (to let the loop bind it).
func (g *Guard) Round() time.Time {
	if g.settling() {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.started.Add(g.Settle)
	}
	g.forgetMembers()
	g.settleWaiting()
	g.askProbes()
	g.mu.Lock()
	now := g.now()
	var due []netip.Addr
	for vip, s := range g.vips {
		s.probes.count(now, &s.others) // before the next replaces it
		if !s.answerHeld() && !s.nextProbe(g.DefendWait).After(now) {
			due = append(due, vip)
		}
	}
	slices.SortFunc(due, netip.Addr.Compare) // probed in one order
	refresh := len(due) > 0 && now.Sub(g.refreshed) >= refreshEvery
	if refresh {
		g.refreshed = now
	}
	g.mu.Unlock()
	if refresh {
		g.id.Refresh()
	}
	for _, vip := range due {
		g.probe(vip)
	}
	next, freeing := g.schedule(now)
	if freeing {
		g.note(Note{Kind: Changed}) // a probe went unanswered: Tell frees the VIP
	}
	return next
}

// schedule returns when the next probe is due, or sooner the end of a
// VIP's wait or of the answer wait of a VIP that was denied; freeing: such
// an answer wait has ended. A probe whose answer is held back is not
// replaced until the wait is settled.
func (g *Guard) schedule(now time.Time) (next time.Time, freeing bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	soonest := func(at time.Time) {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	for _, s := range g.vips {
		s.probes.count(now, &s.others)
		if h := s.others.held; h != nil {
			soonest(h.until)
		}
		if s.answerHeld() {
			continue // the probe is counted, and the next sent, once the wait is settled
		}
		soonest(s.nextProbe(g.DefendWait))
		if s.denied() && (s.others.claim == nil || s.probes.sent.After(s.others.claim.Last)) {
			if end := s.probes.sent.Add(AnswerWait); end.After(now) {
				soonest(end)
			} else {
				freeing = true
			}
		}
	}
	return next, freeing
}

// nextProbe is when s is probed next: every ProbeEvery, holder or not (a
// host that binds the VIP while we hold it and stays silent answers our
// probe); every BlockedEvery while this node should hold it and the check
// cannot say it is free: another host keeps it from us, or no probe went
// unanswered since the link changed. Counted from the latest
// attempt: a wire that is closed or failing is tried again on the same
// schedule, not at once (until one opens again: Attach).
//
// After a defence, none for defendWait: the host we defended against, when
// it is a router of our group that took the VIP on lost advertisements,
// still answers until it hears our advertisement and lets go; our own
// probe would make that its second answer.
func (s *vipState) nextProbe(defendWait time.Duration) time.Time {
	c, tried := s.others.claim, s.probes.tried
	if c != nil && c.defended() {
		return later(tried.Add(BlockedEvery), c.defence.Add(defendWait))
	}
	if s.node.want && (c != nil || !s.probes.checked) {
		return tried.Add(BlockedEvery)
	}
	return tried.Add(ProbeEvery)
}

func (g *Guard) probe(vip netip.Addr) {
	g.mu.Lock()
	s := g.vips[vip]
	w := s.wire.conn
	s.probes.tried = g.now()
	g.mu.Unlock()
	if w == nil {
		return
	}
	if err := w.Probe(); err != nil {
		g.failed(vip, "Probing for the VIP failed", err)
		return
	}
	g.mu.Lock()
	s.probes.sent, s.wire.failing, s.wire.unchecked = g.now(), time.Time{}, false
	g.mu.Unlock()
}

// failed records that vip's wire failed; after UncheckedAfter of failures
// the VIP is no longer checked (said once).
func (g *Guard) failed(vip netip.Addr, msg string, err error) {
	g.log.Debug(msg, "address", vip, "error", err)
	g.mu.Lock()
	s, now := g.vips[vip], g.now()
	if s.wire.failing.IsZero() {
		s.wire.failing = now
	}
	changed := false
	if !s.wire.unchecked && now.Sub(s.wire.failing) >= UncheckedAfter {
		s.wire.unchecked = true
		g.log.Warn("Cannot probe for address conflicts: the VIP is bound without the check", "address", vip, "error", err)
		// The verdict of a VIP we should hold changed: noted at once, not
		// left to the reconcile loop's periodic pass
		// (testdata/guard/wire-fails.txt).
		changed = s.node.want
	}
	g.mu.Unlock()
	if changed {
		g.note(Note{Kind: Changed})
	}
}

// listen opens vip's wire and reads claims from it until ctx ends,
// opening it again after an error (the link went down, the interface was
// created again).
func (g *Guard) listen(ctx context.Context, vip netip.Addr) {
	for ctx.Err() == nil {
		w, err := g.open(vip)
		if err != nil {
			g.OpenFailed(vip, err)
			sleep(ctx, ReopenEvery)
			continue
		}
		if !g.Attach(vip, w) {
			w.Close()
			return
		}
		for {
			c, err := w.Read()
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
					g.failed(vip, "Reading conflict probe answers failed", err)
				}
				break
			}
			g.Observe(vip, c)
		}
		g.Attach(vip, nil)
		w.Close()
		sleep(ctx, ReopenEvery)
	}
}

// OpenFailed records that vip's wire could not be opened (the driver of
// the wires: listen, or internal/testing/sim's).
func (g *Guard) OpenFailed(vip netip.Addr, err error) {
	g.failed(vip, "Opening the conflict probe failed", err)
}

// Attach installs w as vip's wire (nil: none, and the latest probe counts
// for nothing) and wakes the guard; false once the guard is closing. A
// wire that replaces one that failed, when a probe due meanwhile did not
// go, probes at once: nothing was heard while it failed, and a host that
// took the VIP meanwhile and stays silent only answers a probe. A wire
// reopened after a read error with its probes going keeps their schedule
// (testdata/guard/wire-recovers.txt).
func (g *Guard) Attach(vip netip.Addr, w Wire) bool {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	s := g.vips[vip]
	s.wire.conn = w
	if w == nil {
		s.probes.void() // its reader failed: an answer may have gone unheard
	}
	if w != nil && !s.wire.failing.IsZero() && s.probes.tried.After(s.probes.sent) {
		s.probes.tried = time.Time{}
	}
	g.mu.Unlock()
	if w != nil {
		g.kick()
	}
	return true
}

// closeWires closes every wire, ending the readers.
func (g *Guard) closeWires() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for _, s := range g.vips {
		if s.wire.conn != nil {
			s.wire.conn.Close()
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
