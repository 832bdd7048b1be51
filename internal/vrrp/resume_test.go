package vrrp

import (
	"net/netip"
	"slices"
	"testing"
	"time"
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
	inst.SetPriority(100, "") // healthy
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
		"unhealthy": func(i *Instance, _ *fakeTransport) { i.SetPriority(0, "connection refused") },
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
