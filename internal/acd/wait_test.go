package acd

import (
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/novaedge/cpvip/internal/bind"
)

// resolvingHarness is a settled guard whose identity hears peerA, without
// a neighbour entry, at the harness's time: claims from unknown hardware
// addresses are held back for ResolveGrace from then.
func resolvingHarness() (*harness, *Known) {
	h := newHarness()
	k := knownOf(h)
	h.g.id = k
	k.Heard(peerA, 0)
	return h, k
}

var stranger2 = net.HardwareAddr{2, 0, 0, 0, 0, 8}

// A stranger's frames held back while a member is resolved count in the
// order they came, each as of when it came: two frames within
// DefendInterval make a held VIP the stranger's (defended at the first,
// released at the second), whenever the round that settles the wait runs
// — one late after the wait ended, with a second frame in between, too.
func TestHeldFramesCountAsOfWhenTheyCame(t *testing.T) {
	h, _ := resolvingHarness()
	h.verdict(vip, true, true)
	first := h.now
	h.g.Observe(vip, Claim{MAC: foreign})
	h.now = first.Add(ResolveGrace + 10*time.Millisecond) // the wait is over; its round has not run yet
	second := h.now
	h.g.Observe(vip, Claim{MAC: foreign})
	h.g.Round()
	c := h.g.vips[vip].others.claim
	if c == nil || !c.Since.Equal(first) || !c.Last.Equal(second) {
		t.Fatalf("claim %+v, want since the first frame (%v) and last at the second (%v)", c, first, second)
	}
	if v := h.verdict(vip, true, true); v != bind.Claimed {
		t.Fatalf("two frames within DefendInterval: %v, want claimed (released)", v)
	}
	if h.n().defences != 1 {
		t.Fatalf("%d defences, want 1 (at the first frame)", h.defences)
	}
}

// A probe whose answer is held back is not counted unanswered while it
// waits: once the wait settles, its answer counts.
func TestProbeAnsweredWhileHeldIsAnswered(t *testing.T) {
	h := newHarness()
	h.verdict(vip, true, false)
	h.advance(0) // a probe
	sent := h.g.vips[vip].probes.sent
	k := knownOf(h)
	h.g.id = k
	h.now = sent.Add(100 * time.Millisecond)
	k.Heard(peerA, 0) // held back until sent+200ms
	h.g.Observe(vip, Claim{MAC: foreign})
	h.advance(AnswerWait - 90*time.Millisecond) // the answer wait is over; the claim still waits
	if p := h.g.vips[vip].probes; p.checked || p.quiet != 0 {
		t.Fatalf("probe counted unanswered while its answer waits: %+v", p)
	}
	h.advance(50 * time.Millisecond) // the wait is over
	if p := h.g.vips[vip].probes; p.checked || p.quiet != 0 || !p.counted.Equal(sent) {
		t.Fatalf("probe after the wait: %+v, want counted answered", p)
	}
	if v := h.verdict(vip, true, false); v != bind.Claimed {
		t.Fatalf("verdict %v, want claimed", v)
	}
}

// A wait is the first frame's: a member heard later does not extend it.
// Claims of two strangers held back count in the order they came.
func TestWaitKeepsItsFirstDeadlineAndOrder(t *testing.T) {
	for range 20 { // the held claims sit in a map: any order of it
		h, k := resolvingHarness()
		start := h.now
		h.verdict(vip, true, false)
		h.g.Observe(vip, Claim{MAC: foreign})
		h.now = start.Add(time.Millisecond)
		h.g.Observe(vip, Claim{MAC: stranger2})
		h.now = start.Add(ResolveGrace / 2)
		k.Heard(peerB, 0) // resolving until start+150ms
		h.g.Observe(vip, Claim{MAC: foreign})
		h.now = start.Add(ResolveGrace)
		h.g.Round()
		o := h.g.vips[vip].others
		if len(o.waiting) != 0 {
			t.Fatalf("still waiting at the first frames' deadline: %v", o.waiting)
		}
		if o.claim == nil || o.claim.MAC.String() != stranger2.String() || !o.claim.Since.Equal(start.Add(time.Millisecond)) ||
			o.replaced == nil || o.replaced.MAC.String() != foreign.String() {
			t.Fatalf("claim %+v replacing %+v: want the second stranger's, replacing the first's", o.claim, o.replaced)
		}
	}
}

// A VIP bound stays Clear while a claim waits (the holder keeps it until
// the claim is settled); one not bound stays Unprobed (never bound while
// another host may answer for it).
func TestHeldClaimKeepsWhatIsBound(t *testing.T) {
	h, _ := resolvingHarness()
	h.g.vips[vip].probes.checked = true // a probe went unanswered
	h.g.Observe(vip, Claim{MAC: foreign})
	if v := h.verdict(vip, true, true); v != bind.Clear {
		t.Fatalf("bound while a claim waits: %v, want clear", v)
	}
	if v := h.verdict(vip, true, false); v != bind.Unprobed {
		t.Fatalf("not bound while a claim waits: %v, want unprobed", v)
	}
}

// A claim counts at once when no member is being resolved, when its host
// has a claim counted already, and past maxWaiting claims held back.
func TestClaimCountsAtOnce(t *testing.T) {
	h := newHarness()
	k := knownOf(h)
	h.g.id = k
	h.g.Observe(vip, Claim{MAC: foreign})
	if h.g.vips[vip].others.claim == nil {
		t.Fatal("no member being resolved: the claim must count at once")
	}
	k.Heard(peerA, 0)
	h.now = h.now.Add(time.Millisecond)
	h.g.Observe(vip, Claim{MAC: foreign})
	if c := h.g.vips[vip].others.claim; !c.Last.Equal(h.now) || len(h.g.vips[vip].others.waiting) != 0 {
		t.Fatalf("a host with a claim counted: its next frame must count at once (%+v)", c)
	}
	for i := range maxWaiting + 1 {
		h.g.Observe(vip, Claim{MAC: net.HardwareAddr{2, 1, 0, 0, 0, byte(i)}})
	}
	o := h.g.vips[vip].others
	if len(o.waiting) != maxWaiting || o.claim.MAC.String() != (net.HardwareAddr{2, 1, 0, 0, 0, maxWaiting}).String() {
		t.Fatalf("%d held, claim %v: want %d held and the next counted", len(o.waiting), o.claim.MAC, maxWaiting)
	}
}

// An entry gone ends a member's wait: its next advertisement starts a new
// one. An entry arriving with a hardware address already ours ends a wait
// and wakes the guard (Grew), as a new one does.
func TestNeighEndsAndRestartsTheWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := NewKnown(nil, func() time.Time { return now }, nil)
	k.Heard(peerA, 0)
	now = now.Add(ResolveGrace / 2)
	k.NeighGone(peerA)
	k.Heard(peerA, 0)
	if got := k.Resolving(); !got.Equal(now.Add(ResolveGrace)) {
		t.Fatalf("heard after its entry went: resolving until %v, want a fresh %v", got, now.Add(ResolveGrace))
	}
	k.Neigh(peerA, member)
	grown(k)
	k.NeighGone(peerA) // its MAC stays ours
	k.Heard(peerA, 0)
	k.Neigh(peerA, member)
	if !k.Resolving().IsZero() || !grown(k) {
		t.Fatal("an entry with a MAC already ours must end the wait and wake the guard")
	}
}

// The kernel's neighbour news: an entry in resolution keeps a member's
// wait and forgets its address; a failed or deleted one ends it; a
// reachable one is the member's address.
func TestNeighNews(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := NewKnown(nil, func() time.Time { return now }, nil)
	news := func(typ uint16, state int, mac net.HardwareAddr) {
		neighNews(k, netlink.NeighUpdate{Type: typ, Neigh: netlink.Neigh{IP: peerA.AsSlice(), State: state, HardwareAddr: mac}})
	}
	k.Heard(peerA, 0)
	news(unix.RTM_NEWNEIGH, unix.NUD_INCOMPLETE, nil)
	if k.Resolving().IsZero() {
		t.Fatal("an entry in resolution ended the wait")
	}
	news(unix.RTM_NEWNEIGH, unix.NUD_REACHABLE, member)
	if !k.Resolving().IsZero() || !k.Ours(member) {
		t.Fatal("a reachable entry must end the wait and make its MAC ours")
	}
	news(unix.RTM_NEWNEIGH, unix.NUD_INCOMPLETE, nil)
	if _, ok := k.neigh[peerA]; ok {
		t.Fatal("an entry in resolution kept the address known before")
	}
	for _, u := range []struct {
		typ   uint16
		state int
	}{{unix.RTM_NEWNEIGH, unix.NUD_FAILED}, {unix.RTM_DELNEIGH, unix.NUD_REACHABLE}} {
		news(unix.RTM_NEWNEIGH, unix.NUD_REACHABLE, member)
		now = now.Add(time.Second)
		news(u.typ, u.state, member)
		k.Heard(peerA, 0)
		if k.Resolving().IsZero() {
			t.Fatalf("type %d state %#x: the entry must be gone (resolved again at the next advertisement)", u.typ, u.state)
		}
	}
}
