package bgp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/reconcile"
)

// flakyRoutes fails the first failAnnounce announcements and failWithdraw
// withdrawals, journaling every attempt.
type flakyRoutes struct {
	j                          *journal
	failAnnounce, failWithdraw atomic.Int32
}

func (f *flakyRoutes) Announce(p netip.Prefix, _ bool) error {
	if f.failAnnounce.Add(-1) >= 0 {
		f.j.add("announce failed")
		return errors.New("no")
	}
	f.j.add("announce " + p.String())
	return nil
}

func (f *flakyRoutes) Withdraw(p netip.Prefix) error {
	if f.failWithdraw.Add(-1) >= 0 {
		f.j.add("withdraw failed")
		return errors.New("no")
	}
	f.j.add("withdraw " + p.String())
	return nil
}

func (f *flakyRoutes) Stop() { f.j.add("stop") }

// TestRouteChangesRetried: a failed announcement is retried until it
// holds, with no new decision; a failed withdrawal keeps the VIP bound
// (never a route without its address) until a retry succeeds.
func TestRouteChangesRetried(t *testing.T) {
	vip := netip.MustParsePrefix("192.0.2.100/32")
	j := &journal{}
	routes := &flakyRoutes{j: j}
	routes.failAnnounce.Store(2)
	routes.failWithdraw.Store(2)
	a := NewAnnouncer(routes, reconcile.New(j, []netip.Prefix{vip}), nil, time.Hour,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	a.Hold(vip)
	j.waitFor(t, "bind 192.0.2.100/32", "announce failed", "announce failed", "announce 192.0.2.100/32")
	a.Release(vip)
	j.waitFor(t, "bind 192.0.2.100/32", "announce failed", "announce failed", "announce 192.0.2.100/32",
		"withdraw failed", "withdraw failed", "withdraw 192.0.2.100/32", "unbind 192.0.2.100/32")
	if n := a.Failures.Load(); n != 4 {
		t.Errorf("%d failures counted, want 4", n)
	}
}

func TestBackoff(t *testing.T) {
	var b backoff
	vip := netip.MustParsePrefix("192.0.2.100/32")
	var waits []time.Duration
	for range 8 {
		waits = append(waits, b.failed(vip))
	}
	if waits[0] != retryMin || waits[1] != 2*retryMin || waits[7] != retryMax {
		t.Fatalf("waits %v", waits)
	}
	b.done(vip)
	if w := b.failed(vip); w != retryMin {
		t.Fatalf("after a success the wait is %s, want %s", w, retryMin)
	}
}
