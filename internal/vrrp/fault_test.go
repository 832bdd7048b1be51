package vrrp

import (
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"
)

// TestCarrierLossLeavesTheElection: a master without carrier goes to Fault
// at once, sending nothing; with carrier back it is a backup that stays
// one while an equal master (with a lower address: it would win a
// master-master contention) advertises.
func TestCarrierLossLeavesTheElection(t *testing.T) {
	m := masterAt(t, params(100, "192.0.2.13"))
	acts := m.SetCarrier(false, t0)
	if m.State() != Fault || len(acts) != 1 || acts[0].Send || acts[0].To != Fault {
		t.Fatalf("carrier lost: %v %+v", m.State(), acts)
	}
	if acts := m.Timeout(t0.Add(time.Hour)); acts != nil {
		t.Fatalf("timer in fault: %+v", acts)
	}
	other := netip.MustParseAddr("192.0.2.11")
	if acts := m.Receive(adv(100, 100), other, t0); acts != nil || m.State() != Fault {
		t.Fatalf("advertisement in fault: %v %+v", m.State(), acts)
	}
	if acts := m.SetCandidate(true, t0); acts != nil || m.State() != Fault {
		t.Fatalf("candidate in fault: %v %+v", m.State(), acts)
	}
	now := t0.Add(10 * time.Second)
	acts = m.SetCarrier(true, now)
	if m.State() != Backup || len(acts) != 1 || acts[0].To != Backup {
		t.Fatalf("carrier back: %v %+v", m.State(), acts)
	}
	for k := range 10 {
		now = now.Add(time.Second)
		m.Receive(adv(100, 100), other, now)
		if acts := m.Timeout(now.Add(time.Second / 2)); acts != nil || m.State() != Backup {
			t.Fatalf("advert %d from an equal master: %v %+v", k, m.State(), acts)
		}
	}
}

func TestCarrierBackNotCandidate(t *testing.T) {
	m := masterAt(t, params(100, "192.0.2.13"))
	m.SetCarrier(false, t0)
	if acts := m.SetCandidate(false, t0); acts != nil || m.State() != Fault {
		t.Fatalf("leaving in fault: %v %+v", m.State(), acts)
	}
	acts := m.SetCarrier(true, t0)
	if m.State() != Initialize || len(acts) != 1 || acts[0].To != Initialize {
		t.Fatalf("carrier back, not a candidate: %v %+v", m.State(), acts)
	}
	if acts := m.SetCarrier(true, t0); acts != nil {
		t.Fatalf("carrier up twice: %+v", acts)
	}
}

// TestInstanceFaultReleases: the instance releases the VIP on carrier loss,
// sends nothing while in fault, and comes back a backup.
func TestInstanceFaultReleases(t *testing.T) {
	inst, tr, d := runInstance(t, netip.MustParseAddr("192.0.2.11"), 100*time.Millisecond)
	healthy(inst)
	waitDecisions(t, d, "becoming master", last)
	tr.down.Store(true)
	waitDecisions(t, d, "releasing on carrier loss", func(h []bool) bool { return !last(h) })
	if st := inst.Status(); st.State != Fault {
		t.Fatalf("state %s, want fault", st.State)
	}
	tr.mu.Lock()
	n := len(tr.sent)
	tr.mu.Unlock()
	time.Sleep(300 * time.Millisecond) // three advertisement intervals
	tr.mu.Lock()
	sent := tr.sent[n:]
	tr.mu.Unlock()
	if len(sent) > 0 {
		t.Fatalf("sent %d advertisements in fault", len(sent))
	}
	tr.down.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for inst.Status().State == Fault {
		if time.Now().After(deadline) {
			t.Fatal("still in fault after carrier back")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInterfaceMadeAgainRejoinsAsBackup: a master whose interface was
// deleted and created again (told by netlink's news, not at its next refresh)
// releases the VIP and comes back a backup, which an equal master keeps one;
// it does not bind the VIP on the new interface as master.
func TestInterfaceMadeAgainRejoinsAsBackup(t *testing.T) {
	inst, tr, d := runInstance(t, netip.MustParseAddr("192.0.2.11"), 100*time.Millisecond)
	healthy(inst)
	waitDecisions(t, d, "becoming master", last)
	tr.made.Store(true)
	d.feed <- Event{Kind: LinkNews}
	waitDecisions(t, d, "releasing on the new interface", func(h []bool) bool { return !last(h) })
	other := netip.MustParseAddr("192.0.2.10")
	for range 10 {
		tr.in <- fakeRx{adv(100, 10), other}
		time.Sleep(50 * time.Millisecond)
	}
	if st := inst.Status(); st.State != Backup {
		t.Fatalf("state %s, want backup", st.State)
	}
	if h := d.snapshot(); last(h) {
		t.Fatalf("decisions %v: the VIP is held again", h)
	}
}

// TestShortCarrierFlapKeepsTheMaster: a master whose carrier comes back
// before any backup's master down timer can have fired (3 intervals after
// the advertisement before its last: a backup may have missed the last) is
// master again at once, advertising; after a longer loss it waits as a
// backup. Issue 32 finding 3: a 300 ms flap cost a whole master down
// interval, 3.1 s with no holder. At fb2b4e5 the window ended 3 intervals
// after its last advertisement: a backup that missed that one had taken
// over by then, and the flap made two masters.
func TestShortCarrierFlapKeepsTheMaster(t *testing.T) {
	for _, c := range []struct {
		name string
		down time.Duration // from the last advertisement
		want State
	}{
		{"300 ms", 300 * time.Millisecond, Master},
		{"just under two intervals after the one before the last", 2*time.Second - time.Millisecond, Master},
		{"two intervals: a backup that missed the last may fire", 2 * time.Second, Backup},
		{"ten seconds", 10 * time.Second, Backup},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := masterAt(t, params(100, "192.0.2.13"))
			last := m.Deadline().Add(-time.Second) // its latest advertisement
			m.SetCarrier(false, last.Add(100*time.Millisecond))
			acts := m.SetCarrier(true, last.Add(c.down))
			if m.State() != c.want {
				t.Fatalf("carrier back %v after the last advertisement: %v %+v, want %v", c.down, m.State(), acts, c.want)
			}
			if c.want == Master && (len(acts) != 2 || !acts[0].Send || acts[0].Priority != 100) {
				t.Fatalf("master again without advertising at once: %+v", acts)
			}
		})
	}
}

// TestBackupFaultEndsAsBackup: only a master skips the wait.
func TestBackupFaultEndsAsBackup(t *testing.T) {
	m := NewMachine(params(100, "192.0.2.13"))
	m.SetCandidate(true, t0)
	m.SetCarrier(false, t0.Add(time.Second))
	if m.SetCarrier(true, t0.Add(1100*time.Millisecond)); m.State() != Backup {
		t.Fatalf("state %v, want backup", m.State())
	}
}

// TestInterfaceMadeAgainForgetsTheMaster: a Fault of an interface made
// again ends as a backup however short (a new MAC: the others must hear
// our advertisement before our gratuitous ARP).
func TestInterfaceMadeAgainForgetsTheMaster(t *testing.T) {
	m := masterAt(t, params(100, "192.0.2.13"))
	now := m.Deadline()
	m.Fault("the interface was created again", now)
	m.Forget()
	if m.SetCarrier(true, now.Add(10*time.Millisecond)); m.State() != Backup {
		t.Fatalf("state %v, want backup", m.State())
	}
}

// TestResumedNodeRejoinsAfterAFault: a node that resumed as master after a
// kill is a candidate like any other: after a carrier loss it rejoins the
// election. Issue 32 finding 1: it stayed in Initialize for good, and the
// last healthy node watched the VIP sit elsewhere.
func TestResumedNodeRejoinsAfterAFault(t *testing.T) {
	m := NewMachine(params(100, "192.0.2.13"))
	m.SetPriority(100, t0)
	if acts := m.Rejoin(t0, "resumed"); m.State() != Master || len(acts) != 2 {
		t.Fatalf("resume: %v %+v", m.State(), acts)
	}
	m.SetCarrier(false, t0.Add(time.Second))
	m.SetCarrier(true, t0.Add(10*time.Second))
	if m.State() != Backup {
		t.Fatalf("after a long fault: %v, want backup (a candidate)", m.State())
	}
	m.Timeout(m.Deadline())
	if m.State() != Master {
		t.Fatalf("alone after the master down interval: %v, want master", m.State())
	}
}

// TestResumeDuringAFaultIsACandidate: a daemon restarted with its VIP bound
// whose carrier is lost before the first health verdict is a candidate
// once the verdict is healthy, and rejoins when the carrier is back. The
// simulation found it (seed 183): it stayed in Initialize for good.
func TestResumeDuringAFaultIsACandidate(t *testing.T) {
	c := NewCore(resumeConfig(100*time.Millisecond), discard)
	c.Start(t0)
	c.Carrier(false, t0.Add(time.Millisecond))
	c.SetPriority(100, "", t0.Add(5*time.Millisecond))
	c.Timeout(c.Deadline()) // the resume, an interval after the start
	c.Carrier(true, t0.Add(3*time.Second))
	if c.State() != Backup {
		t.Fatalf("carrier back after a resume in fault: %v, want backup", c.State())
	}
}

// effectLog records a Core's requests.
type effectLog struct {
	sent    []uint8
	decided []bool
	asked   int
}

// of takes c's effects into o and returns o.
func (o *effectLog) of(c *Core) *effectLog {
	for _, e := range c.Ready() {
		switch e.Kind {
		case Ask:
			o.asked++
		case Advertise:
			o.sent = append(o.sent, e.Priority)
		case Decide:
			o.decided = append(o.decided, e.Hold)
		}
	}
	return o
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
