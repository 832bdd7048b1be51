package spread

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/health"
)

func TestSpreaderWithOnlyItselfDoesNotSteer(t *testing.T) {
	s := New(Config{VIPs: []netip.Addr{netip.MustParseAddr("192.0.2.100")}, Port: 6443}, slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { s.Run(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run with no other backend did not return")
	}
	if s.Active() {
		t.Error("active with no other backend")
	}
}

// A backend whose check cannot be built is tried last; a reload's timing
// skips it; the local one follows the node's own checks.
func TestSpreaderBackendsHealth(t *testing.T) {
	remotes := []netip.Addr{netip.MustParseAddr("192.0.2.12"), netip.MustParseAddr("192.0.2.13")}
	s := New(Config{VIPs: []netip.Addr{netip.MustParseAddr("192.0.2.100")}, Port: 6443, Remotes: remotes,
		NewChecker: func(base netip.AddrPort) (*health.Checker, error) {
			if base.Addr() == remotes[0] {
				return nil, errors.New("no")
			}
			return health.New(health.Config{URL: "https://" + base.String() + "/livez", Interval: time.Second, Timeout: time.Second,
				FailThreshold: 1, RiseThreshold: 1}, slog.New(slog.DiscardHandler), time.Now)
		}}, slog.New(slog.DiscardHandler))
	s.Tune(health.Timing{Interval: 2 * time.Second, Timeout: time.Second, FailThreshold: 1, RiseThreshold: 1})
	s.SetLocal(health.Healthy)
	st := s.Status()
	if len(st) != 3 || !st[0].Local || st[0].Health != Up || st[1].Health != Down || st[2].Health != Unknown {
		t.Errorf("status %+v: want local up, the unchecked one down, the other unknown", st)
	}
	s.pool.DialFailed(0)
	s.LocalResult(health.Result{Outcome: health.Passed})
	if s.Status()[0].DialFailed {
		t.Error("a passing local check left the failed dial's mark")
	}
}
