package vrrp

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/health"
)

func resumeConfig(interval time.Duration) Config {
	return Config{VIPs: []netip.Prefix{netip.MustParsePrefix("192.0.2.100/32")}, VRID: 51, Interval: interval, Resume: true}
}

// TestResumeKeepsVIPWhenHealthy: VIPs found bound at start are not removed;
// the first healthy verdict makes the node master at once, advertising, so
// the VIP never leaves it.
func TestResumeKeepsVIPWhenHealthy(t *testing.T) {
	tr := newFakeTransport(netip.MustParseAddr("192.0.2.11"))
	inst, d := startInstance(t, resumeConfig(time.Second), tr)
	healthy(inst)
	waitDecisions(t, d, "resuming as master", last)
	if h := d.snapshot(); slices.Contains(h, false) {
		t.Fatalf("decisions %v: the VIP was released on the way", h)
	}
	if st := inst.Status(); st.State != Master {
		t.Fatalf("state %s, want master", st.State)
	}
	if p := tr.sentPriorities(); len(p) == 0 || p[0] != 100 {
		t.Fatalf("sent %v, want an advertisement with priority 100 at once", p)
	}
}

// TestResumeGivesUp: the VIPs found at start go when the apiserver is not
// healthy, when another master announces itself, or when no verdict comes
// within the master down interval.
func TestResumeGivesUp(t *testing.T) {
	for name, do := range map[string]func(*Instance, *fakeTransport){
		"unhealthy": func(i *Instance, _ *fakeTransport) { tell(i, health.Unhealthy, false, "connection refused") },
		"another master": func(_ *Instance, tr *fakeTransport) {
			tr.in <- fakeRx{adv: adv(100, 100), src: netip.MustParseAddr("192.0.2.12")}
		},
		"no verdict": func(*Instance, *fakeTransport) {},
	} {
		t.Run(name, func(t *testing.T) {
			tr := newFakeTransport(netip.MustParseAddr("192.0.2.11"))
			inst, d := startInstance(t, resumeConfig(20*time.Millisecond), tr)
			do(inst, tr)
			waitDecisions(t, d, "releasing", func(h []bool) bool { return len(h) > 0 && !h[0] })
			if st := inst.Status(); st.State == Master {
				t.Fatalf("state %s, want not master", st.State)
			}
		})
	}
}

// TestResumeListensAnIntervalFirst: a restarted daemon whose first health
// verdict comes before it has read the advertisements of the node that took
// over while it was down (its queued packets and the verdict meet in one
// select) does not become master: it resumes only after listening a whole
// advertisement interval and hearing no master. On the build before this
// rule it resumed at the verdict, advertised, and took the VIP back from
// the node that held it.
func TestResumeListensAnIntervalFirst(t *testing.T) {
	var out effectLog
	c := NewCore(resumeConfig(200*time.Millisecond), discard)
	c.Start(t0)
	c.SetPriority(100, "", t0.Add(2*time.Millisecond)) // the verdict, first
	if c.State() == Master || len(out.of(c).sent) > 0 {
		t.Fatalf("resumed at the verdict, before an interval of listening: %s, sent %v", c.State(), out.of(c).sent)
	}
	if at := c.Deadline(); !at.Equal(t0.Add(250 * time.Millisecond)) {
		t.Fatalf("resume due at %v, want an interval and a quarter after the start", at.Sub(t0))
	}
	// The taker's advertisement, read after the verdict.
	c.Receive(adv(100, 20), netip.MustParseAddr("192.0.2.9"), t0.Add(3*time.Millisecond))
	c.Timeout(t0.Add(250 * time.Millisecond))
	if c.State() != Backup || len(out.of(c).sent) > 0 || len(out.of(c).decided) == 0 || slices.Contains(out.of(c).decided, true) {
		t.Fatalf("state %s, sent %v, decided %v: want the VIP released, a backup, never master", c.State(), out.of(c).sent, out.of(c).decided)
	}
}

// TestResumeAfterAQuietInterval: heard no master for an interval, the
// healthy restarted daemon resumes, keeping the VIP it found bound.
func TestResumeAfterAQuietInterval(t *testing.T) {
	var out effectLog
	c := NewCore(resumeConfig(200*time.Millisecond), discard)
	c.Start(t0)
	c.SetPriority(100, "", t0.Add(2*time.Millisecond))
	c.Timeout(c.Deadline())
	if c.State() != Master || slices.Contains(out.of(c).decided, false) || len(out.of(c).sent) != 1 {
		t.Fatalf("state %s, sent %v, decided %v: want master at once, the VIP kept", c.State(), out.of(c).sent, out.of(c).decided)
	}
	// A verdict that comes after the interval resumes at once.
	c = NewCore(resumeConfig(200*time.Millisecond), discard)
	c.Start(t0)
	c.SetPriority(100, "", t0.Add(300*time.Millisecond))
	if at := c.Deadline(); !at.Equal(t0.Add(300 * time.Millisecond)) {
		t.Fatalf("late verdict: resume due %v after the start, want at once (from the timer, after the queued packets)", at.Sub(t0))
	}
	c.Timeout(c.Deadline())
	if c.State() != Master {
		t.Fatalf("late verdict: %s, want master", c.State())
	}
}
