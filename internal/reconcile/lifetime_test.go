package reconcile

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/reconcile/reconciletest"
)

// clock is a settable time for the reconciler.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func lifetimeRec(f *reconciletest.Addrs) (*Reconciler, *clock) {
	c := &clock{epoch}
	r := New(f, []netip.Prefix{vip4})
	r.SetLifetime(Lifetime{Valid: 3 * time.Second, Renew: 500 * time.Millisecond}, c.now)
	return r, c
}

// A held VIP is bound with its lifetime and set again every renewal
// period, not more often; RenewAt says when.
func TestLifetimeRenewed(t *testing.T) {
	f := reconciletest.New(nodeIP)
	r, c := lifetimeRec(f)
	hold := map[netip.Prefix]bool{vip4: true}
	r.Step(hold)
	if got := f.Take(); !slices.Equal(got, []string{"add 192.0.2.100/32 for 3s"}) {
		t.Fatalf("install: %q", got)
	}
	if at := r.RenewAt(); !at.Equal(epoch.Add(500 * time.Millisecond)) {
		t.Fatalf("renewal due %v after the install, want 500ms", at.Sub(epoch))
	}
	c.t = epoch.Add(400 * time.Millisecond)
	r.Step(hold)
	if got := f.Take(); len(got) != 0 {
		t.Fatalf("renewed before its time: %q", got)
	}
	c.t = epoch.Add(500 * time.Millisecond)
	if ch := r.Step(hold); len(ch) != 0 {
		t.Fatalf("a renewal is no change: %+v", ch)
	}
	if got := f.Take(); !slices.Equal(got, []string{"add 192.0.2.100/32 for 3s"}) {
		t.Fatalf("renewal: %q", got)
	}
	r.Step(map[netip.Prefix]bool{vip4: false})
	if at := r.RenewAt(); !at.IsZero() {
		t.Fatalf("renewal due %v after the release", at)
	}
}

// A VIP gone after its lifetime (the process did not renew it in time) is
// lapsed, not bound again by the step; one deleted by hand within it is
// put back.
func TestLapsedIsNotBoundAgain(t *testing.T) {
	f := reconciletest.New(nodeIP)
	r, c := lifetimeRec(f)
	hold := map[netip.Prefix]bool{vip4: true}
	r.Step(hold)
	_ = f.Del(vip4) // deleted by hand a second later
	c.t = epoch.Add(time.Second)
	if got := actions(r.Step(hold)); !slices.Equal(got, []Action{Fixed}) {
		t.Fatalf("deleted by hand: %v", got)
	}
	_ = f.Del(vip4) // the kernel, the lifetime run out: no step for 3 s
	c.t = epoch.Add(4 * time.Second)
	if got := actions(r.Step(hold)); !slices.Equal(got, []Action{Lapsed}) {
		t.Fatalf("lapsed: %v", got)
	}
	if list, _ := f.List(); slices.Contains(list, vip4) {
		t.Fatal("a lapsed VIP was bound again by the step")
	}
	if r.Fresh(vip4.Addr()) {
		t.Error("a lapsed VIP is fresh")
	}
}

// A renewal that fails is counted, retried a quarter of a renewal period
// later (not at once, in a loop), and does not eat a re-announcement asked
// for: the VIP is bound as before.
func TestRenewalFailure(t *testing.T) {
	f := reconciletest.New(nodeIP)
	r, c := lifetimeRec(f)
	hold := map[netip.Prefix]bool{vip4: true}
	r.Step(hold)
	f.Fail(errors.New("netlink busy"), nil)
	c.t = epoch.Add(500 * time.Millisecond)
	ch := r.Step(hold)
	if len(ch) != 1 || ch[0].Action != Failed || !ch[0].Renewal {
		t.Fatalf("failed renewal: %+v", ch)
	}
	if at := r.RenewAt(); !at.Equal(c.t.Add(125 * time.Millisecond)) {
		t.Fatalf("retry due %v after the failure, want 125ms", at.Sub(c.t))
	}
	vips, ok := r.ToAnnounce(hold, hold, ch, false)
	if !ok || !slices.Equal(vips, []netip.Prefix{vip4}) {
		t.Fatalf("re-announce after a failed renewal: %v %v", vips, ok)
	}
}

// The loop lets a lapsed VIP go and tells the hook, unless the election
// spoke since the step's snapshot: its word stands.
func TestLoopLapse(t *testing.T) {
	var lapsed []netip.Prefix
	l := NewLoop(New(reconciletest.New(), []netip.Prefix{vip4}), nil, time.Hour,
		Hooks{Lapsed: func(v netip.Prefix) { lapsed = append(lapsed, v) }})
	l.Hold(vip4)
	l.snapshot()
	l.lapse([]Change{{VIP: vip4, Action: Lapsed}})
	if l.Wanted(vip4.Addr()) || !slices.Equal(lapsed, []netip.Prefix{vip4}) {
		t.Fatalf("wanted %v, hook %v: want it let go and the hook told", l.Wanted(vip4.Addr()), lapsed)
	}
	l.snapshot()
	l.Hold(vip4) // the election, after the snapshot
	l.lapse([]Change{{VIP: vip4, Action: Lapsed}})
	if !l.Wanted(vip4.Addr()) {
		t.Fatal("a Hold after the snapshot was undone by the lapse")
	}
}

// Renew sets the due lifetimes again without reading the interface; a
// renewal so late that the lifetime may have run out leaves it to a Step.
func TestRenewOnly(t *testing.T) {
	f := reconciletest.New(nodeIP)
	r, c := lifetimeRec(f)
	r.Step(map[netip.Prefix]bool{vip4: true})
	f.Take()
	f.Fail(nil, errors.New("no listing wanted"))
	c.t = epoch.Add(500 * time.Millisecond)
	if ch, ok := r.Renew(held4); !ok || len(ch) != 0 {
		t.Fatalf("renew: %+v %v", ch, ok)
	}
	if got := f.Take(); !slices.Equal(got, []string{"add 192.0.2.100/32 for 3s"}) {
		t.Fatalf("renew: %q", got)
	}
	c.t = epoch.Add(3 * time.Second) // 2.5 s since: the process did not run
	if _, ok := r.Renew(held4); ok {
		t.Fatal("renewed a lifetime that may have run out, without looking")
	}
	if got := f.Take(); len(got) != 0 {
		t.Fatalf("late renew wrote %q", got)
	}
}

// held4 is the election's word holding vip4.
var held4 = map[netip.Addr]bool{vip4.Addr(): true}

// TestLetGoIsNotRenewed: a VIP the election let go of whose removal failed
// (the interface was gone) is not renewed: on an interface made again the
// renewal would bind it on a node that is no longer master; a Step looks
// instead, and stops holding it.
func TestLetGoIsNotRenewed(t *testing.T) {
	f := reconciletest.New(nodeIP)
	r, c := lifetimeRec(f)
	r.Step(map[netip.Prefix]bool{vip4: true})
	f.Fail(nil, errors.New("no such device")) // the interface is gone: the release cannot list
	r.Step(map[netip.Prefix]bool{vip4: false})
	f.Fail(nil, nil)
	f.Del(vip4) // made again: without the VIP
	f.Take()
	c.t = epoch.Add(500 * time.Millisecond)
	if _, ok := r.Renew(map[netip.Addr]bool{}); ok {
		t.Fatal("renewed a VIP the election let go of")
	}
	if got := f.Take(); len(got) != 0 {
		t.Fatalf("renewal wrote %q", got)
	}
	r.Step(map[netip.Prefix]bool{vip4: false})
	if _, ok := r.Renew(map[netip.Addr]bool{}); !ok {
		t.Fatal("still held after a Step found it gone")
	}
	if got := f.Take(); len(got) != 0 {
		t.Fatalf("wrote %q, want nothing", got)
	}
}

// TestLoopDoesNotRenewWhatItLetGo: the loop renews with the election's
// latest word: a VIP it was told to let go of, whose removal failed (the
// interface was gone), is not renewed onto the interface made again.
func TestLoopDoesNotRenewWhatItLetGo(t *testing.T) {
	f := reconciletest.New(nodeIP)
	r, c := lifetimeRec(f)
	l := NewLoop(r, nil, time.Hour, Hooks{})
	l.Hold(vip4)
	l.pass(false)
	f.Fail(nil, errors.New("no such device"))
	l.Set(vip4, false)
	l.pass(false)
	f.Fail(nil, nil)
	f.Del(vip4) // made again: without the VIP
	f.Take()
	c.t = epoch.Add(500 * time.Millisecond)
	if l.renew() {
		t.Fatal("renewed instead of asking for a pass")
	}
	if got := f.Take(); len(got) != 0 {
		t.Fatalf("renewal wrote %q", got)
	}
}

// A VIP found bound at start (a dead run's, with what is left of its
// lifetime) is held while the election decides: renewed at once and then
// every period, so it does not run out while the restarted daemon listens;
// the verdict against it removes it.
func TestResumeRenewsTheFoundVIP(t *testing.T) {
	f := reconciletest.New(nodeIP, vip4)
	r, c := lifetimeRec(f)
	if ok, err := r.Resume(false); !ok || err != nil {
		t.Fatalf("resume: %v %v", ok, err)
	}
	f.Take()
	if at := r.RenewAt(); at.After(c.t) {
		t.Fatalf("the found VIP's renewal is due at %s, not at once", at)
	}
	if ch, ok := r.Renew(map[netip.Addr]bool{}); !ok || len(ch) != 0 { // no word yet: resuming
		t.Fatalf("renew: %+v %v", ch, ok)
	}
	if got := f.Take(); !slices.Equal(got, []string{"add 192.0.2.100/32 for 3s"}) {
		t.Fatalf("renew at start: %q", got)
	}
	r.Step(map[netip.Prefix]bool{}) // undecided: left as it is
	if got := f.Take(); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "del") }) {
		t.Fatalf("an undecided step removed the found VIP: %q", got)
	}
	c.t = c.t.Add(500 * time.Millisecond)
	r.Renew(map[netip.Addr]bool{}) // no word yet: resuming
	if got := f.Take(); !slices.Equal(got, []string{"add 192.0.2.100/32 for 3s"}) {
		t.Fatalf("second renewal: %q", got)
	}
	r.Step(map[netip.Prefix]bool{vip4: false})
	if got := f.Take(); !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "del 192.0.2.100/32") }) {
		t.Fatalf("not resumed, the found VIP stayed: %q", got)
	}
	if ok, _ := New(reconciletest.New(nodeIP), []netip.Prefix{vip4}).Resume(true); ok {
		t.Error("resumed a VIP that is not bound")
	}
}

// TestResumeWithOneVIPMissing: a dual stack whose IPv6 VIP another host
// answers for was held with IPv4 alone: with the conflict check, that is
// resumed; without it, or with both missing, or one bound with another
// prefix (not ours as configured), it is not.
func TestResumeWithOneVIPMissing(t *testing.T) {
	other := netip.MustParsePrefix("2001:db8::100/64")
	for _, tt := range []struct {
		name       string
		bound      []netip.Prefix
		missingOne bool
		want       bool
	}{
		{"IPv4 alone, conflict check", []netip.Prefix{vip4}, true, true},
		{"IPv4 alone, no conflict check", []netip.Prefix{vip4}, false, false},
		{"both", []netip.Prefix{vip4, vip6}, false, true},
		{"none", nil, true, false},
		{"IPv6 with another prefix", []netip.Prefix{vip4, other}, true, false},
	} {
		f := reconciletest.New(append([]netip.Prefix{nodeIP}, tt.bound...)...)
		if got, err := New(f, []netip.Prefix{vip4, vip6}).Resume(tt.missingOne); got != tt.want || err != nil {
			t.Errorf("%s: resume %v (%v), want %v", tt.name, got, err, tt.want)
		}
	}
}

// TestWakeRenewsAloneOrPasses: woken by its renewal timer the loop renews
// alone when that suffices (no listing), and passes when only a pass can
// tell (a lifetime that may have run out); it returns when the renewal is
// due next.
func TestWakeRenewsAloneOrPasses(t *testing.T) {
	f := reconciletest.New(nodeIP)
	r, c := lifetimeRec(f)
	var lapsed []netip.Prefix
	l := NewLoop(r, nil, time.Hour, Hooks{Lapsed: func(vip netip.Prefix) { lapsed = append(lapsed, vip) }})
	l.Hold(vip4)
	if at := l.Wake(false); !at.Equal(epoch.Add(500 * time.Millisecond)) {
		t.Fatalf("renewal due at %v, want 500ms", at.Sub(epoch))
	}
	f.Take()
	f.Fail(nil, errors.New("no listing wanted"))
	c.t = epoch.Add(500 * time.Millisecond)
	if at := l.Wake(true); !at.Equal(epoch.Add(time.Second)) {
		t.Fatalf("next renewal at %v, want 1s", at.Sub(epoch))
	}
	if got := f.Take(); !slices.Equal(got, []string{"add 192.0.2.100/32 for 3s"}) {
		t.Fatalf("renewal: %q, want the lifetime set again without a pass", got)
	}
	f.Fail(nil, nil)
	_ = f.Del(vip4) // ran out while the process did not run
	c.t = epoch.Add(4 * time.Second)
	l.Wake(true)
	if !slices.Equal(lapsed, []netip.Prefix{vip4}) {
		t.Fatalf("a late renewal lapsed %v, want a pass that finds %s ran out", lapsed, vip4)
	}
}
