package l2

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/novaedge/cpvip/internal/reconcile/reconciletest"
)

type recorder struct {
	mu   sync.Mutex
	sent []netip.Addr
	ch   chan netip.Addr
}

func (r *recorder) send(_ string, vip netip.Addr) error {
	r.mu.Lock()
	r.sent = append(r.sent, vip)
	r.mu.Unlock()
	r.ch <- vip
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sent)
}

func newTestAnnouncer(t *testing.T, opts Options) (*Announcer, *recorder, chan reconcile.Event, *reconciletest.Addrs) {
	t.Helper()
	vip := netip.MustParsePrefix("192.0.2.100/32")
	addrs := reconciletest.New()
	rec := &recorder{ch: make(chan netip.Addr, 100)}
	events := make(chan reconcile.Event, 4)
	opts.Period, opts.Interface = time.Hour, "eth0"
	a := NewAnnouncer(opts, reconcile.New(addrs, []netip.Prefix{vip}), events, rec.send,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	return a, rec, events, addrs
}

func expectSends(t *testing.T, r *recorder, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-r.ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("announcement %d of %d never sent", i+1, n)
		}
	}
}

func TestBurstRepeatsThenStops(t *testing.T) {
	a, rec, _, addrs := newTestAnnouncer(t, Options{Repeat: 3, Gap: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	vip := netip.MustParsePrefix("192.0.2.100/32")
	a.Hold(vip)
	expectSends(t, rec, 3)
	time.Sleep(50 * time.Millisecond)
	if n := rec.count(); n != 3 {
		t.Errorf("%d announcements, want exactly GARP_REPEAT=3", n)
	}
	if got, _ := addrs.List(); !slices.Equal(got, []netip.Prefix{vip}) {
		t.Errorf("addresses %v", got)
	}
	cancel()
	<-done
	if got, _ := addrs.List(); len(got) != 0 {
		t.Errorf("after Run returned: %v", got)
	}
	if a.Sent.Load() != 3 {
		t.Errorf("Sent = %d", a.Sent.Load())
	}
}

func TestLinkUpAndRefreshAnnounceAgain(t *testing.T) {
	a, rec, events, _ := newTestAnnouncer(t, Options{Repeat: 1, Refresh: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	vip := netip.MustParsePrefix("192.0.2.100/32")
	a.Hold(vip)
	expectSends(t, rec, 3) // first, then refreshes
	events <- reconcile.LinkUp
	expectSends(t, rec, 1)
	a.Release(vip)
	time.Sleep(50 * time.Millisecond) // let the release land
	before := rec.count()
	time.Sleep(100 * time.Millisecond)
	if after := rec.count(); after != before {
		t.Errorf("announcements went on after release: %d -> %d", before, after)
	}
}

// TestTakeoverAnnouncesSelfFirst: a takeover announces this node's own
// address of the VIP's family before the VIP, once, so that the other
// nodes' neighbour entries for us carry the MAC that then answers for the
// VIP (their conflict checks know it as a member's).
func TestTakeoverAnnouncesSelfFirst(t *testing.T) {
	self := netip.MustParseAddr("192.0.2.11")
	a, rec, _, _ := newTestAnnouncer(t, Options{Repeat: 2, Gap: time.Millisecond,
		Self: func(netip.Addr) netip.Addr { return self }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	vip := netip.MustParsePrefix("192.0.2.100/32")
	a.Hold(vip)
	expectSends(t, rec, 3)
	time.Sleep(20 * time.Millisecond)
	cancel()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if want := []netip.Addr{self, vip.Addr(), vip.Addr()}; !slices.Equal(rec.sent, want) {
		t.Fatalf("sent %v, want %v", rec.sent, want)
	}
}

// TestReleaseEndsAFailingBurst: the interface is deleted while a burst
// announces the VIP: the kernel takes the VIP with it (no step removes it:
// listing the addresses fails), the send fails and is retried. The election
// releases the VIP; when the interface is back, nothing is announced. The
// burst retried on and announced the VIP on the new interface while another
// node held it (TestInterfaceDeletedAndCreatedAgain: the holder's conflict
// check saw a stranger and released it).
func TestReleaseEndsAFailingBurst(t *testing.T) {
	a, rec, _, addrs := newTestAnnouncer(t, Options{Repeat: 1})
	var gone sync.Mutex // held while the interface is gone
	fail := errors.New("no such interface")
	send := a.send
	a.send = func(ifname string, vip netip.Addr) error {
		if !gone.TryLock() {
			return fail
		}
		gone.Unlock()
		return send(ifname, vip)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	vip := netip.MustParsePrefix("192.0.2.100/32")
	gone.Lock()
	a.Hold(vip)                       // bound: the burst starts
	time.Sleep(50 * time.Millisecond) // its first send fails, a retry waits
	if got, _ := addrs.List(); !slices.Equal(got, []netip.Prefix{vip}) {
		t.Fatalf("addresses %v, want the VIP bound", got)
	}
	addrs.Fail(nil, fail) // the interface is gone
	a.Release(vip)
	time.Sleep(50 * time.Millisecond)
	gone.Unlock() // the interface is back
	addrs.Fail(nil, nil)
	time.Sleep(6 * RetryGap)
	if n := rec.count(); n != 0 {
		t.Fatalf("%d announcements after the release: %v", n, rec.sent)
	}
}

// TestLateRepeatWaitsForTheElection: a late repeat waits until the
// election has read what was queued meanwhile (then its gates are asked
// again: Burst.Go, testdata/burst/only-the-leader.txt); an election that
// does not catch up within catchUpWait does not hold it back.
func TestLateRepeatWaitsForTheElection(t *testing.T) {
	var caught atomic.Bool
	wait := func(ctx context.Context, _ time.Time, max time.Duration) bool { // an election that catches up when caught is set
		for end := time.Now().Add(max); !caught.Load() && time.Now().Before(end) && ctx.Err() == nil; {
			time.Sleep(time.Millisecond)
		}
		return caught.Load()
	}
	a, _, _, _ := newTestAnnouncer(t, Options{WaitCaughtUp: wait})
	ctx := context.Background()
	go func() {
		time.Sleep(20 * time.Millisecond)
		caught.Store(true)
	}()
	start := time.Now()
	if !a.caughtUp(ctx, start) || !caught.Load() {
		t.Fatal("a late repeat went on before the election caught up")
	}
	caught.Store(false)
	start = time.Now()
	if !a.caughtUp(ctx, start) {
		t.Fatal("a late repeat was held back by an election that never caught up")
	}
	if waited := time.Since(start); waited < catchUpWait/2 {
		t.Fatalf("waited %v for an election that never caught up, want about %v", waited, catchUpWait)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if a.caughtUp(done, time.Now()) {
		t.Fatal("a late repeat went on after the announcer stopped")
	}
}

// TestLateRepeatGoesOnlyWhileLeading: a late repeat waits until the
// election has read what the kernel queued, and does not go if the
// election has made this node step back meanwhile (the queued
// advertisements were another master's), though the VIP is still wanted
// (a handover keeps it).
func TestLateRepeatGoesOnlyWhileLeading(t *testing.T) {
	var calls atomic.Int32
	var stepped atomic.Bool
	leading := func() bool {
		if calls.Add(1) == 2 { // the repeat's gates: the process does not run for a while
			time.Sleep(3 * lateRepeat)
		}
		return !stepped.Load()
	}
	caughtUp := func(context.Context, time.Time, time.Duration) bool { // the election reads the master's advertisement
		stepped.Store(true)
		return true
	}
	a, rec, _, _ := newTestAnnouncer(t, Options{Repeat: 2, Gap: time.Millisecond, Leading: leading, WaitCaughtUp: caughtUp})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	a.Hold(netip.MustParsePrefix("192.0.2.100/32"))
	expectSends(t, rec, 1)
	waitFor(t, stepped.Load)
	time.Sleep(50 * time.Millisecond)
	if n := rec.count(); n != 1 {
		t.Fatalf("%d announcements: a late repeat went after the election made this node step back", n)
	}
}

// A node that is not the master announces nothing, though it keeps the
// VIP (a handover); a master for a while told that another router
// announced its VIP announces it again, a VIP it let go never.
func TestOnlyTheMasterAnnounces(t *testing.T) {
	var leading, established atomic.Bool
	a, rec, _, addrs := newTestAnnouncer(t, Options{Repeat: 1, Leading: leading.Load, Contests: established.Load})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	vip := netip.MustParsePrefix("192.0.2.100/32")
	a.Hold(vip) // bound while the election already says backup
	waitFor(t, func() bool { got, _ := addrs.List(); return len(got) == 1 })
	time.Sleep(50 * time.Millisecond)
	if n := rec.count(); n != 0 {
		t.Fatalf("%d announcements from a node that is not the master", n)
	}
	leading.Store(true)
	a.Contested(vip.Addr()) // a master that just took over: the election settles it
	time.Sleep(50 * time.Millisecond)
	if n := rec.count(); n != 0 {
		t.Fatalf("%d announcements from a master that just took over", n)
	}
	established.Store(true)
	a.Contested(vip.Addr())
	expectSends(t, rec, 1)
	a.Release(vip)
	waitFor(t, func() bool { got, _ := addrs.List(); return len(got) == 0 })
	a.Contested(vip.Addr())
	time.Sleep(50 * time.Millisecond)
	if n := rec.count(); n != 1 {
		t.Fatalf("%d announcements; a VIP let go is never announced again", n)
	}
	if got, _ := addrs.List(); len(got) != 0 {
		t.Fatalf("Contested bound %v again", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
