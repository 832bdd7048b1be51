package reconcile

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/novaedge/cpvip/internal/bind"
	"github.com/novaedge/cpvip/internal/reconcile/reconciletest"
)

// verdicts is a conflict check with a fixed verdict per VIP.
type verdicts map[netip.Addr]bind.Check

func (v verdicts) Verdict(vip netip.Addr, _ bool) bind.Check { return v[vip] }

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
