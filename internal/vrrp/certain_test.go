package vrrp

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

// masterCore returns a core that is master at priority 100, alone, with
// what it asked for so far forgotten.
func masterCore(t *testing.T, out *effectLog) *Core {
	t.Helper()
	c := NewCore(Config{VIPs: []netip.Prefix{netip.MustParsePrefix("192.0.2.100/32")}, VRID: 51, Interval: 200 * time.Millisecond, Sends: 2}, discard)
	c.SetPrimary(netip.MustParseAddr("192.0.2.11"))
	c.SetPriority(100, "", t0)
	c.Timeout(c.Deadline())
	if c.State() != Master {
		t.Fatalf("state %s, want master", c.State())
	}
	c.Ready()
	*out = effectLog{}
	return c
}

// resignedForRefused returns a master core whose apiserver was just found
// refusing (a certain failure), and when.
func resignedForRefused(t *testing.T, out *effectLog) (*Core, time.Time) {
	t.Helper()
	c := masterCore(t, out)
	now := t0.Add(time.Second)
	c.SetCertain(true)
	c.SetPriority(FailOpenPriority, "connection refused", now)
	return c, now
}

// untilMaster runs c's timers until it is master or nothing is due.
func untilMaster(c *Core) {
	for range 20 {
		at := c.Deadline()
		if at.IsZero() || c.State() == Master {
			return
		}
		c.Timeout(at)
	}
}

// A holder whose apiserver refuses (or drains) resigns at once, with fail
// open too: priority 0, the VIP kept until a backup announces itself and a
// grace after. Its backups then take over within their skew, settled or
// not. On fb2b4e5's build it kept the VIP at the fail-open priority until a
// backup settled, which under sustained loss could be never.
func TestCertainFailureResigns(t *testing.T) {
	var out effectLog
	c, now := resignedForRefused(t, &out)
	if !slices.Equal(out.of(c).sent, []uint8{0}) || slices.Contains(out.of(c).decided, false) || c.State() == Master {
		t.Fatalf("sent %v, decided %v, state %s: want priority 0 sent, the VIP kept, not master", out.of(c).sent, out.of(c).decided, c.State())
	}
	c.Receive(adv(100, 20), netip.MustParseAddr("192.0.2.12"), now.Add(30*time.Millisecond))
	c.Timeout(c.Deadline())
	if len(out.of(c).decided) == 0 || slices.Contains(out.of(c).decided, true) {
		t.Fatalf("decided %v after the backup announced itself: want the VIP released after the grace", out.of(c).decided)
	}
	if c.State() != Backup || c.Priority() != FailOpenPriority {
		t.Fatalf("state %s priority %d after the handover: want a backup at the fail-open priority (fail open keeps a candidate)", c.State(), c.Priority())
	}
}

// Fail open: no node takes the VIP from a holder that resigned for a
// certain failure (every apiserver refuses): it keeps the VIP and is
// master again at the fail-open priority.
func TestCertainFailureKeepsTheVIPWhenNoneTakesIt(t *testing.T) {
	var out effectLog
	c, _ := resignedForRefused(t, &out)
	untilMaster(c)
	if c.State() != Master || c.Priority() != FailOpenPriority || slices.Contains(out.of(c).decided, false) {
		t.Fatalf("state %s priority %d decided %v: want master at the fail-open priority, the VIP never released", c.State(), c.Priority(), out.of(c).decided)
	}
	if n := len(out.of(c).sent); n == 0 || out.of(c).sent[n-1] != FailOpenPriority {
		t.Fatalf("sent %v: want it advertising the fail-open priority", out.of(c).sent)
	}
}

// An ambiguous failure (a time-out) keeps the holder master at the
// fail-open priority: a settled node takes it.
func TestAmbiguousFailureStaysFailOpen(t *testing.T) {
	var out effectLog
	c := masterCore(t, &out)
	c.SetCertain(false)
	c.SetPriority(FailOpenPriority, "timeout", t0.Add(time.Second))
	if c.State() != Master || !slices.Equal(out.of(c).sent, []uint8{FailOpenPriority}) {
		t.Fatalf("state %s, sent %v: want master advertising the fail-open priority", c.State(), out.of(c).sent)
	}
}

// A backup at the fail-open priority does not bring its takeover forward
// when the master resigns: it waits its master down interval, so that a
// healthy node, or the master resigning for a certain failure, keeps the
// VIP first. A healthy backup takes over within its skew.
func TestFailOpenBackupWaitsOutAResignation(t *testing.T) {
	for _, tt := range []struct {
		prio uint8
		by   time.Duration // takes over at most this long after the resignation
	}{{FailOpenPriority, 0}, {100, time.Second}} {
		m := NewMachine(params(tt.prio, "192.0.2.12"))
		m.SetPriority(tt.prio, t0)
		m.SetCandidate(true, t0)
		m.Receive(adv(100, 100), netip.MustParseAddr("192.0.2.11"), t0)
		resigned := t0.Add(500 * time.Millisecond)
		m.Receive(adv(0, 100), netip.MustParseAddr("192.0.2.11"), resigned)
		after := m.Deadline().Sub(resigned)
		if tt.by > 0 && after > tt.by {
			t.Errorf("priority %d: takes over %v after the resignation, want within its skew", tt.prio, after)
		}
		if tt.by == 0 && after < 3*time.Second-500*time.Millisecond {
			t.Errorf("priority %d: takes over %v after the resignation, want its master down interval from the last advertisement", tt.prio, after)
		}
	}
}

// A second failing verdict during the wait for a healthy node (a drain's
// port closing: draining, then refused) keeps the wait: no node healthy,
// the holder keeps the VIP and is master again at the fail-open priority.
// The review found it released the VIP at once and joined as a backup.
func TestCertainFailureSecondVerdictKeepsTheFallback(t *testing.T) {
	var out effectLog
	c := masterCore(t, &out)
	now := t0.Add(time.Second)
	c.SetCertain(true)
	c.SetPriority(FailOpenPriority, "the apiserver is shutting down", now)
	c.SetPriority(FailOpenPriority, "connection refused", now.Add(150*time.Millisecond))
	untilMaster(c)
	if c.State() != Master || c.Priority() != FailOpenPriority || slices.Contains(out.of(c).decided, false) {
		t.Fatalf("state %s priority %d decided %v: want master at the fail-open priority, the VIP never released", c.State(), c.Priority(), out.of(c).decided)
	}
}

// Healthy again before any node took over: master again at once at its
// priority, the VIP kept all along.
func TestCertainFailureRecoveredDuringTheWait(t *testing.T) {
	var out effectLog
	c, now := resignedForRefused(t, &out)
	c.SetCertain(false)
	c.SetPriority(100, "", now.Add(100*time.Millisecond))
	if c.State() != Master || c.Priority() != 100 || slices.Contains(out.of(c).decided, false) {
		t.Fatalf("state %s priority %d decided %v: want master at 100 at once, the VIP kept", c.State(), c.Priority(), out.of(c).decided)
	}
}

// The carrier lost during the wait releases the VIP (a fault): the wait's
// end then keeps nothing and claims nothing.
func TestCertainFailureThenCarrierLoss(t *testing.T) {
	var out effectLog
	c, now := resignedForRefused(t, &out)
	c.Carrier(false, now.Add(50*time.Millisecond))
	c.Timeout(now.Add(time.Second))
	if c.State() == Master || slices.Contains(out.of(c).decided, true) {
		t.Fatalf("state %s decided %v: want no master without carrier", c.State(), out.of(c).decided)
	}
}

// A healthy backup whose takeover of a resigning master is due turns
// unhealthy before its skew runs out (every apiserver killed, the holder
// noticed first): it does not take over; it waits as a failing backup
// does, and the resigned holder keeps the VIP. In the real control plane
// lab the VIP went to the node that noticed last.
func TestResignationTakeoverRevertsWhenTheTakerFails(t *testing.T) {
	m := NewMachine(params(100, "192.0.2.13"))
	m.SetPriority(100, t0)
	m.SetCandidate(true, t0)
	m.Receive(adv(100, 100), netip.MustParseAddr("192.0.2.12"), t0)
	m.Receive(adv(0, 100), netip.MustParseAddr("192.0.2.12"), t0.Add(100*time.Millisecond))
	soon := m.Deadline()
	if soon.Sub(t0) > time.Second {
		t.Fatalf("takeover due %v after the last advertisement, want within the skew of the resignation", soon.Sub(t0))
	}
	m.SetPriority(FailOpenPriority, t0.Add(120*time.Millisecond))
	if at := m.Deadline(); !at.After(soon) || at.Sub(t0) < 3*time.Second {
		t.Fatalf("takeover due %v after the last advertisement once failing, want its master down interval", at.Sub(t0))
	}
}
