package vrrp

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/health"
)

func voteCore(failOpen bool) *Core {
	c := NewCore(Config{VIPs: []netip.Prefix{netip.MustParsePrefix("192.0.2.100/32")}, VRID: 51, Priority: 100, FailOpen: failOpen,
		Interval: 200 * time.Millisecond, Sends: 2}, discard)
	c.SetPrimary(netip.MustParseAddr("192.0.2.11"))
	return c
}

func verdict(st health.State, settled, certain bool, why string) health.Transition {
	return health.Transition{State: st, Changed: true, Settled: settled, Certain: certain, Last: health.Result{Reason: why}}
}

// TestHealthGivesThePriority: the health verdict sets the priority the
// node takes part with — its own while healthy, the fail-open priority
// once healthy since start, else 0 — and a reload's priority applies at
// once while healthy only.
func TestHealthGivesThePriority(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		c := voteCore(failOpen)
		c.Health(verdict(health.Unhealthy, false, false, "status 500"), t0)
		if c.Priority() != 0 {
			t.Errorf("fail open %v: never healthy, priority %d, want 0", failOpen, c.Priority())
		}
		c.Health(verdict(health.Healthy, true, false, ""), t0)
		if c.Priority() != 100 || c.Failing() != "" {
			t.Errorf("fail open %v: healthy, priority %d failing %q, want 100", failOpen, c.Priority(), c.Failing())
		}
		c.SetBase(150, t0)
		if c.Priority() != 150 {
			t.Errorf("fail open %v: reloaded while healthy, priority %d, want 150", failOpen, c.Priority())
		}
		c.Health(verdict(health.Unhealthy, false, false, "status 500"), t0)
		want := map[bool]uint8{false: 0, true: FailOpenPriority}[failOpen]
		if c.Priority() != want || c.Failing() != "status 500" {
			t.Errorf("fail open %v: unhealthy after healthy, priority %d failing %q, want %d", failOpen, c.Priority(), c.Failing(), want)
		}
		c.SetBase(120, t0)
		if c.Priority() != want {
			t.Errorf("fail open %v: reloaded while unhealthy, priority %d, want %d", failOpen, c.Priority(), want)
		}
		c.Health(verdict(health.Healthy, true, false, ""), t0)
		if c.Priority() != 120 {
			t.Errorf("fail open %v: healthy again, priority %d, want the reloaded 120", failOpen, c.Priority())
		}
	}
}

// TestHealthCertainLaterResigns: a master failing on time-outs keeps the
// VIP at the fail-open priority; the same failure found certain later (its
// port now refuses) makes it resign at once, though its state is
// unchanged. A transition with nothing new changes nothing.
func TestHealthCertainLaterResigns(t *testing.T) {
	var out effectLog
	c := voteCore(true)
	c.Health(verdict(health.Healthy, true, false, ""), t0)
	c.Timeout(c.Deadline())
	if c.State() != Master {
		t.Fatalf("state %s, want master", c.State())
	}
	now := t0.Add(time.Second)
	c.Health(verdict(health.Unhealthy, false, false, "no answer within 1s"), now)
	if c.State() != Master || c.Priority() != FailOpenPriority {
		t.Fatalf("failing on time-outs: %s at %d, want master at the fail-open priority", c.State(), c.Priority())
	}
	c.Ready()
	out = effectLog{}
	c.Health(health.Transition{State: health.Unhealthy, Certain: true, Last: health.Result{Outcome: health.Refused, Reason: "connection refused"}}, now)
	if !slices.Equal(out.of(c).sent, []uint8{0}) || c.State() == Master {
		t.Fatalf("refused now: sent %v, state %s, want priority 0 sent", out.of(c).sent, c.State())
	}
	c.Ready()
	out = effectLog{}
	c.Health(health.Transition{State: health.Unhealthy, Certain: true, Last: health.Result{Outcome: health.Refused, Reason: "connection refused"}}, now)
	if len(out.of(c).sent) != 0 || len(out.of(c).decided) != 0 {
		t.Fatalf("the same verdict again: sent %v, decided %v, want nothing", out.of(c).sent, out.of(c).decided)
	}
}

// TestHealthLatestOnly: a driver may drop a transition not yet taken for a
// newer one (vrrp.Instance keeps the latest): the core acts on the state it
// last took, not on the transition's Changed.
func TestHealthLatestOnly(t *testing.T) {
	c := voteCore(false)
	// Healthy (Changed) was dropped; the newer says only that it settled.
	c.Health(health.Transition{State: health.Healthy, Settled: true}, t0)
	if c.Priority() != 100 {
		t.Fatalf("priority %d, want 100: the state changed since the core last heard", c.Priority())
	}
}

// TestHealthSettledBeforePriority: an unsettled healthy backup does not take
// the VIP from a master at the fail-open priority; one settled takes it
// within its skew.
func TestHealthSettledBeforePriority(t *testing.T) {
	c := voteCore(true)
	failOpen := netip.MustParseAddr("192.0.2.12")
	c.Health(verdict(health.Healthy, false, false, ""), t0)
	now := t0
	for range 10 {
		now = now.Add(100 * time.Millisecond)
		c.Receive(adv(FailOpenPriority, 20), failOpen, now)
		c.Timeout(now)
	}
	if c.State() != Backup {
		t.Fatalf("unsettled: %s, want a backup following the fail-open master", c.State())
	}
	c.Health(health.Transition{State: health.Healthy, Settled: true}, now)
	c.Timeout(c.Deadline())
	if c.State() != Master {
		t.Fatalf("settled: %s, want master", c.State())
	}
}
