package vrrp

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// servedParams: 200 ms adverts, a 4 s wait for a master whose host answers.
func servedParams() Params {
	p := params(100, "192.0.2.11")
	p.Interval, p.ServedWait = 200*time.Millisecond, 4*time.Second
	return p
}

// followAt makes m a backup that heard a master's advertisement at t.
func followAt(t *testing.T, m *Machine, at time.Time) {
	t.Helper()
	m.SetCandidate(true, at)
	m.Receive(adv(100, 20), netip.MustParseAddr("192.0.2.12"), at)
	if m.State() != Backup {
		t.Fatalf("not a backup: %v", m.State())
	}
}

// runSilent drives m's timers from a master's last advertisement until m
// takes over or until end; answers says whether the master's host answers
// a probe sent at a time (it does 1 ms later). It returns when m took over
// (zero: not by end), its reason and how often m asked.
func runSilent(m *Machine, end time.Time, answers func(time.Time) bool) (took time.Time, reason string, asked int) {
	return runSilentAs(m, end, true, answers)
}

// runSilentAs is runSilent with the answering host a known router of our
// group (member) or not.
func runSilentAs(m *Machine, end time.Time, member bool, answers func(time.Time) bool) (took time.Time, reason string, asked int) {
	for at := m.Deadline(); !at.IsZero() && !at.After(end); at = m.Deadline() {
		for _, a := range m.Timeout(at) {
			if a.Ask {
				asked++
				if answers(at) {
					m.Served(member, at.Add(time.Millisecond))
				}
			}
			if a.To == Master {
				return at, a.Reason, asked
			}
		}
	}
	return time.Time{}, "", asked
}

func TestSilentMasterWhoseHostAnswers(t *testing.T) {
	p := servedParams()
	down := 3*p.Interval + 156*p.Interval/256 // the master down interval at priority 100
	tests := []struct {
		name    string
		answers func(since time.Duration) bool // since the master's last advertisement
		took    time.Duration                  // when the backup takes over, since then
		reason  string
	}{
		{"host gone with the daemon (power off, link cut): no wait", func(time.Duration) bool { return false },
			down, "within the master down interval"},
		{"host answers throughout (daemon killed, not restarted): the whole wait", func(time.Duration) bool { return true },
			p.ServedWait, "still answers"},
		{"host stops answering at 1.5 s: within two half intervals of it", func(s time.Duration) bool { return s < 1500*time.Millisecond },
			1500*time.Millisecond + 2*p.Interval/2, "stopped answering"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMachine(p)
			followAt(t, m, t0)
			took, reason, asked := runSilent(m, t0.Add(time.Minute), func(at time.Time) bool { return tt.answers(at.Sub(t0)) })
			if took.IsZero() {
				t.Fatal("never took over")
			}
			if got := took.Sub(t0); got < tt.took-p.Interval/2 || got > tt.took {
				t.Errorf("took over %v after the last advertisement, want %v (at most half an interval sooner)", got, tt.took)
			}
			if !strings.Contains(reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", reason, tt.reason)
			}
			if asked == 0 {
				t.Error("never asked")
			}
		})
	}
}

// TestSilentMasterAdvertisesAgain: the restarted daemon's advertisement
// ends the wait; the next silence starts from it.
func TestSilentMasterAdvertisesAgain(t *testing.T) {
	p := servedParams()
	m := NewMachine(p)
	followAt(t, m, t0)
	restarted := t0.Add(2 * time.Second)
	if took, _, _ := runSilent(m, restarted, func(time.Time) bool { return true }); !took.IsZero() {
		t.Fatalf("took over at %v while the master's host answered", took.Sub(t0))
	}
	m.Receive(adv(100, 20), netip.MustParseAddr("192.0.2.12"), restarted)
	if m.State() != Backup || m.Deadline().After(restarted.Add(m.MasterDownInterval())) {
		t.Fatalf("after the master came back: %v, next timer %v after it", m.State(), m.Deadline().Sub(restarted))
	}
	took, _, _ := runSilent(m, t0.Add(time.Minute), func(time.Time) bool { return false })
	if want := restarted.Add(m.MasterDownInterval()); !took.Equal(want) {
		t.Fatalf("second silence, host gone: took over %v after the advertisement, want %v", took.Sub(restarted), want.Sub(restarted))
	}
}

// TestNoAskingWhenTheMasterSpoke: a resignation (priority 0), a fail-open
// master, a weaker one with Preempt and an answer nobody asked for change
// nothing; ServedWait no longer than the master down interval asks nothing.
func TestNoAskingWhenTheMasterSpoke(t *testing.T) {
	p := servedParams()
	t.Run("resigned", func(t *testing.T) {
		m := NewMachine(p)
		followAt(t, m, t0)
		m.Receive(adv(0, 20), netip.MustParseAddr("192.0.2.12"), t0.Add(time.Second))
		took, _, asked := runSilent(m, t0.Add(time.Minute), func(time.Time) bool { return true })
		if asked != 0 || took.Sub(t0) > time.Second+m.handoverSkew() {
			t.Fatalf("asked %d times, took over %v after", asked, took.Sub(t0))
		}
	})
	t.Run("weaker master with preempt", func(t *testing.T) {
		pp := p
		pp.Preempt = true
		m := NewMachine(pp)
		followAt(t, m, t0)
		m.Receive(adv(50, 20), netip.MustParseAddr("192.0.2.12"), t0.Add(100*time.Millisecond))
		m.Receive(adv(50, 20), netip.MustParseAddr("192.0.2.12"), t0.Add(650*time.Millisecond))
		if took, _, asked := runSilent(m, t0.Add(time.Minute), func(time.Time) bool { return true }); asked != 0 || took.IsZero() {
			t.Fatalf("asked %d times, took over %v after", asked, took.Sub(t0))
		}
	})
	t.Run("an answer not asked for", func(t *testing.T) {
		m := NewMachine(p)
		followAt(t, m, t0)
		m.Served(true, t0.Add(100*time.Millisecond))
		if took, _, _ := runSilent(m, t0.Add(time.Minute), func(time.Time) bool { return false }); !took.Equal(t0.Add(m.MasterDownInterval())) {
			t.Fatalf("took over %v after, want the master down interval", took.Sub(t0))
		}
	})
	t.Run("wait off", func(t *testing.T) {
		pp := p
		pp.ServedWait = 0
		m := NewMachine(pp)
		followAt(t, m, t0)
		if took, _, asked := runSilent(m, t0.Add(time.Minute), func(time.Time) bool { return true }); asked != 0 || !took.Equal(t0.Add(m.MasterDownInterval())) {
			t.Fatalf("asked %d times, took over %v after", asked, took.Sub(t0))
		}
	})
}

// TestServedWaitOutlastsNoPriorityChange: a backup's own priority changing
// while it waits (its apiserver flapping, a reload) restarts its timer but
// not the wait for the master's host, which still counts from the master's
// last advertisement (review of issue 35: a flap every 1.5 s kept the
// backup waiting for good).
func TestServedWaitOutlastsNoPriorityChange(t *testing.T) {
	p := servedParams()
	m := NewMachine(p)
	followAt(t, m, t0)
	prio := []uint8{90, 100}
	var took time.Time
	for k := 0; took.IsZero() && k < 40; k++ {
		at := t0.Add(time.Duration(k+1) * 1500 * time.Millisecond)
		took, _, _ = runSilent(m, at, func(time.Time) bool { return true })
		m.SetPriority(prio[k%2], at)
	}
	if limit := t0.Add(p.ServedWait + m.MasterDownInterval()); took.IsZero() || took.After(limit) {
		t.Fatalf("took over %v after the master's last advertisement, want within RESTART_WAIT and a master-down interval (%v)",
			took.Sub(t0), limit.Sub(t0))
	}
}

// TestResignedMasterRepeatsPriorityZero: a master that resigned and keeps
// the VIP until another announces itself sends priority 0 again every
// interval, and stops once one did: a lost one must not leave the backups
// waiting on its host, which still answers for the VIP.
func TestResignedMasterRepeatsPriorityZero(t *testing.T) {
	var out effectLog
	c := NewCore(Config{VIPs: nil, VRID: 51, Interval: 200 * time.Millisecond, Sends: 2}, discard)
	c.SetPrimary(netip.MustParseAddr("192.0.2.11"))
	c.Start(t0)
	c.SetPriority(100, "", t0)
	for now := t0; c.State() != Master; now = c.Deadline() {
		c.Timeout(now)
	}
	at := c.Deadline()
	out.of(c).sent = nil
	c.SetPriority(0, "draining", at)
	for k := 0; k < 3; k++ {
		at = c.Deadline()
		c.Timeout(at)
	}
	zeros := 0
	for _, p := range out.of(c).sent {
		if p == 0 {
			zeros++
		}
	}
	if zeros < 3 {
		t.Fatalf("sent %v while handing over: want priority 0 at the resignation and again every interval", out.of(c).sent)
	}
	c.Receive(adv(100, 20), netip.MustParseAddr("192.0.2.12"), at.Add(10*time.Millisecond))
	out.of(c).sent = nil
	for k := 0; k < 3 && !c.Deadline().IsZero(); k++ {
		c.Timeout(c.Deadline())
	}
	for _, p := range out.of(c).sent {
		if p == 0 {
			t.Fatalf("sent %v after another master announced itself", out.of(c).sent)
		}
	}
}

// TestStrangersAnswerCountsOnlyBeforeAnyMaster: a host not known as a
// router of our group answering for the VIP makes a backup wait only while
// it has heard no master at all (its daemon started after the master went
// silent: the kubeadm e2e); one that follows a master takes over at the
// master down interval whatever a stranger answers (a conflict on one VIP
// of a dual stack must not slow the takeover of the other).
func TestStrangersAnswerCountsOnlyBeforeAnyMaster(t *testing.T) {
	p := servedParams()
	always := func(time.Time) bool { return true }
	m := NewMachine(p)
	m.SetCandidate(true, t0)
	if took, reason, _ := runSilentAs(m, t0.Add(time.Minute), false, always); !took.Equal(t0.Add(p.ServedWait)) || !strings.Contains(reason, "still answers") {
		t.Fatalf("no master heard: took over %v after (%q), want the whole wait %v", took.Sub(t0), reason, p.ServedWait)
	}
	m = NewMachine(p)
	followAt(t, m, t0)
	if took, _, _ := runSilentAs(m, t0.Add(time.Minute), false, always); !took.Equal(t0.Add(m.MasterDownInterval())) {
		t.Fatalf("following a master: took over %v after, want the master down interval", took.Sub(t0))
	}
}

// A stranger's answer for one VIP of a dual-stack pair (a conflict on that
// family) does not use up the backup's asking: the master's host answering
// for the other VIP still reaches the election. On fb2b4e5's build the
// stranger's answer ended the asking, the router's was dropped, and the
// backup took over from a master whose daemon was restarting.
func TestStrangersAnswerKeepsTheAsking(t *testing.T) {
	i := NewInstance(Config{VIPs: []netip.Prefix{netip.MustParsePrefix("192.0.2.100/32"), netip.MustParsePrefix("2001:db8::100/128")},
		VRID: 51, Interval: 200 * time.Millisecond, ServedWait: 4 * time.Second, Ask: func() {}}, nil, discard)
	i.askedAt.Store(t0.UnixNano())
	i.asking.Store(true)
	if !i.answers(false, t0.Add(time.Millisecond)) || !i.asking.Load() { // a stranger answers for the IPv6 VIP
		t.Fatal("a stranger's answer did not reach the election, or ended the asking")
	}
	if !i.answers(true, t0.Add(2*time.Millisecond)) { // the master's host for the IPv4 VIP
		t.Fatal("the router's answer after the stranger's did not reach the election")
	}
	if i.asking.Load() {
		t.Error("still asking after a router answered")
	}
	if i.answers(false, t0.Add(3*time.Millisecond)) {
		t.Error("the stranger's answer after the router's reached the election: not asked any more")
	}
}

// An answer seen before the question was asked (a note on its way as the
// backup asked) is not its answer: it neither ends the asking nor reaches
// the election, and the answer that follows does.
func TestAnswerSeenBeforeTheQuestion(t *testing.T) {
	i := NewInstance(Config{VIPs: []netip.Prefix{netip.MustParsePrefix("192.0.2.100/32")},
		VRID: 51, Interval: 200 * time.Millisecond, ServedWait: 4 * time.Second, Ask: func() {}}, nil, discard)
	i.askedAt.Store(t0.UnixNano())
	i.asking.Store(true)
	if i.answers(true, t0.Add(-time.Millisecond)) || !i.asking.Load() {
		t.Fatal("an answer seen before the question was taken for its answer")
	}
	if !i.answers(true, t0.Add(time.Millisecond)) || i.asking.Load() {
		t.Fatal("the answer after the question did not reach the election")
	}
}

// TestPreemptWhileWaitingForAServingHost: a backup whose silent master's
// host answers (it waits for it) hears a weaker master with Preempt: it
// takes the VIP for preempting it, a live master, not for a silence (the
// simulation, seed 187: a keepalived node at priority 70).
func TestPreemptWhileWaitingForAServingHost(t *testing.T) {
	p := servedParams()
	p.Preempt = true
	m := NewMachine(p)
	followAt(t, m, t0)
	_, _, asked := runSilent(m, t0.Add(time.Second), func(time.Time) bool { return true })
	if asked == 0 || !m.wait.answered() {
		t.Fatalf("not waiting for the serving host after %d questions (phase %v)", asked, m.wait.phase)
	}
	weaker := netip.MustParseAddr("192.0.2.13")
	at := t0.Add(time.Second)
	m.Receive(adv(70, 20), weaker, at)
	took, reason, _ := runSilent(m, at.Add(time.Minute), func(time.Time) bool { return true })
	if took.IsZero() || !strings.Contains(reason, "preempting the weaker master 192.0.2.13 (priority 70)") || !m.Took().Live() {
		t.Fatalf("took over at %v for %q (cause %v), want preempting 192.0.2.13", took, reason, m.Took())
	}
}
