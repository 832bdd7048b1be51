package reconcile

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/bind"
	"github.com/novaedge/cpvip/internal/reconcile/reconciletest"
)

// verdicts is a conflict check with a fixed verdict per VIP.
type verdicts map[netip.Addr]bind.Check

func (v verdicts) Tell(netip.Addr, bool, bool)       {}
func (v verdicts) Verdict(vip netip.Addr) bind.Check { return v[vip] }

// TestResumedVIPSurvivesASettlingCheck: a VIP found bound at start (an
// earlier run of ours was killed) stays bound when the election resumes it
// while the conflict check has not probed yet. Issue 32 finding 2: the check
// said no because the reconciler had not installed it itself, and the VIP
// was removed 5 ms after start and bound again 1.6 s later.
func TestResumedVIPSurvivesASettlingCheck(t *testing.T) {
	f := reconciletest.New(nodeIP, vip4)
	r := New(f, []netip.Prefix{vip4})
	r.SetCheck(verdicts{vip4.Addr(): bind.Unprobed})
	if got := r.Step(map[netip.Prefix]bool{}); len(got) != 0 {
		t.Fatalf("undecided: %v, want nothing touched", got)
	}
	if got := r.Step(map[netip.Prefix]bool{vip4: true}); len(got) != 0 || len(f.Take()) != 0 {
		t.Fatalf("resumed while the check settles: %v, want the VIP kept", got)
	}
	if !r.Held(vip4) {
		t.Fatal("a VIP elected and bound is held")
	}
}

// TestCheckKeepsAnUnboundVIPDown: an elected VIP is not bound before a probe
// went unanswered, nor while another host answers; a bound one is removed
// when another host answers for it.
func TestCheckKeepsAnUnboundVIPDown(t *testing.T) {
	f := reconciletest.New(nodeIP)
	v := verdicts{vip4.Addr(): bind.Unprobed}
	r := New(f, []netip.Prefix{vip4})
	r.SetCheck(v)
	hold := map[netip.Prefix]bool{vip4: true}
	if got := r.Step(hold); len(got) != 0 {
		t.Fatalf("unprobed: %v, want nothing bound", got)
	}
	v[vip4.Addr()] = bind.Claimed
	if got := r.Step(hold); len(got) != 0 {
		t.Fatalf("claimed: %v, want nothing bound", got)
	}
	v[vip4.Addr()] = bind.Clear
	if got := actions(r.Step(hold)); !slices.Equal(got, []Action{Installed}) {
		t.Fatalf("clear: %v, want installed", got)
	}
	v[vip4.Addr()] = bind.Claimed
	if got := actions(r.Step(hold)); !slices.Equal(got, []Action{Removed}) {
		t.Fatalf("claimed while bound: %v, want removed", got)
	}
}

// TestUnboundVIPIsNeverAnnounced: the elector asks for a VIP to be held and
// announced (Hold) while the conflict check has not cleared it: nothing is
// bound and nothing announced; once cleared, it is bound (and announced by
// the Changed hook), and a Hold after that announces it again. The loop
// announced an elected VIP the check kept down (TestAnnouncementsOnTheWire:
// an unsolicited NA for the IPv6 VIP 150 ms before it was bound).
func TestUnboundVIPIsNeverAnnounced(t *testing.T) {
	f := reconciletest.New(nodeIP)
	v := &lockedVerdicts{v: verdicts{vip4.Addr(): bind.Unprobed}}
	r := New(f, []netip.Prefix{vip4})
	r.SetCheck(v)
	changed := make(chan Change, 16)
	announced := make(chan []netip.Prefix, 16)
	passes := make(chan struct{}, 64)
	l := NewLoop(r, nil, time.Hour, Hooks{
		Before:     func(map[netip.Prefix]bool) { passes <- struct{}{} },
		Changed:    func(c Change) { changed <- c },
		Reannounce: func(held []netip.Prefix, _ string) { announced <- held },
	})
	runLoop(t, l)
	<-passes // the first pass, before any Hold
	l.Hold(vip4)
	<-passes
	l.Hold(vip4)
	<-passes
	select {
	case held := <-announced:
		t.Fatalf("announced %v while the check kept it unbound", held)
	case c := <-changed:
		t.Fatalf("changed %+v while the check kept it unbound", c)
	default:
	}
	v.set(vip4.Addr(), bind.Clear)
	l.Poke()
	select {
	case c := <-changed:
		if c.Action != Installed {
			t.Fatalf("change %+v, want installed", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not bound once cleared")
	}
	l.Hold(vip4)
	expectAnnounced(t, announced, "a bound VIP asked for again", vip4)
}

// lockedVerdicts is verdicts safe to change while a loop reads it.
type lockedVerdicts struct {
	mu sync.Mutex
	v  verdicts
}

func (l *lockedVerdicts) Tell(netip.Addr, bool, bool) {}

func (l *lockedVerdicts) Verdict(vip netip.Addr) bind.Check {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v[vip]
}

func (l *lockedVerdicts) set(vip netip.Addr, c bind.Check) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.v[vip] = c
}

// TestAnnouncementAskedDuringAListFailureIsKept: a VIP found bound at start
// (undecided passes leave it as it is), then the election resumes it and asks
// for an announcement (Hold) on a pass that cannot read the interface: the
// request waits for the next pass that can, and is served once.
func TestAnnouncementAskedDuringAListFailureIsKept(t *testing.T) {
	f := reconciletest.New(nodeIP, vip4)
	r := New(f, []netip.Prefix{vip4})
	announced := make(chan []netip.Prefix, 16)
	passes := make(chan struct{}, 64)
	l := NewLoop(r, nil, time.Hour, Hooks{
		Before:     func(map[netip.Prefix]bool) { passes <- struct{}{} },
		Reannounce: func(held []netip.Prefix, _ string) { announced <- held },
	})
	runLoop(t, l)
	<-passes // undecided: nothing touched
	f.Fail(nil, errors.New("dump interrupted"))
	l.Hold(vip4)
	<-passes
	select {
	case held := <-announced:
		t.Fatalf("announced %v on a pass that could not read the interface", held)
	default:
	}
	f.Fail(nil, nil)
	l.Poke()
	expectAnnounced(t, announced, "the announcement asked for during the failure", vip4)
	l.Poke()
	<-passes
	<-passes
	select {
	case held := <-announced:
		t.Fatalf("announced again: %v", held)
	default:
	}
}

// TestHeldVIPGoneIsLost: a held VIP disappears from the interface (deleted
// by hand, flushed) while the conflict check does not let it be bound again:
// the step reports it Lost (nothing to remove), so that what announces it
// stops, and does not announce it again.
func TestHeldVIPGoneIsLost(t *testing.T) {
	f := reconciletest.New(nodeIP)
	v := verdicts{vip4.Addr(): bind.Clear}
	r := New(f, []netip.Prefix{vip4})
	r.SetCheck(v)
	hold := map[netip.Prefix]bool{vip4: true}
	if got := actions(r.Step(hold)); !slices.Equal(got, []Action{Installed}) {
		t.Fatalf("%v, want installed", got)
	}
	_ = f.Del(vip4)
	v[vip4.Addr()] = bind.Claimed
	if got := actions(r.Step(hold)); !slices.Equal(got, []Action{Lost}) {
		t.Fatalf("%v, want lost", got)
	}
	if r.Held(vip4) {
		t.Error("a lost VIP is still held")
	}
	if got, _ := r.ToAnnounce(hold, hold, nil, true); len(got) != 0 {
		t.Errorf("a lost VIP announced: %v", got)
	}
	if got := r.Step(hold); len(got) != 0 {
		t.Errorf("lost again: %v", got)
	}
}

// runLoop runs l until the test ends.
func runLoop(t *testing.T, l *Loop) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// expectAnnounced waits for one Reannounce hook call with want.
func expectAnnounced(t *testing.T, ch <-chan []netip.Prefix, what string, want ...netip.Prefix) {
	t.Helper()
	select {
	case held := <-ch:
		if !slices.Equal(held, want) {
			t.Fatalf("%s: announced %v, want %v", what, held, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not announced", what)
	}
}
