package acd

import (
	"net"
	"testing"
	"time"

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

// TestHeldFramesCountAsOfWhenTheyCame: a stranger's frames held back while a
// member is resolved count in the order they came, each as of when it came:
// two frames within DefendInterval make a bound VIP the stranger's (defended
// at the first, released at the second), even when the round runs after the
// wait ended and a second frame came in between.
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

// TestProbeAnsweredWhileHeldIsAnswered: a probe whose answer is held back is
// not counted unanswered while it waits: once the wait settles, its answer
// counts.
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

// TestWaitKeepsItsFirstDeadlineAndOrder: a wait is the first frame's: a
// member heard later, or a later frame, does not extend it. The frames of
// two strangers held back count in the order they came.
func TestWaitKeepsItsFirstDeadlineAndOrder(t *testing.T) {
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
	if o.held != nil {
		t.Fatalf("still waiting at the first frame's deadline: %+v", o.held)
	}
	if o.claim == nil || o.claim.MAC.String() != foreign.String() || !o.claim.Since.Equal(start.Add(ResolveGrace/2)) ||
		o.replaced == nil || o.replaced.MAC.String() != stranger2.String() {
		t.Fatalf("claim %+v replacing %+v: want the first stranger's latest frame, replacing the second's", o.claim, o.replaced)
	}
}

// TestHeldClaimKeepsWhatIsBound: a VIP bound stays Clear while a claim waits
// (the holder keeps it until the claim is settled); one not bound stays
// Unprobed (never bound while another host may answer for it).
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

// TestHeldFramesOfTwoHostsCountInOrder: frames of two hosts held back count
// in the order they came, not host by host: a probe the first host answered
// after the second's frames is answered.
func TestHeldFramesOfTwoHostsCountInOrder(t *testing.T) {
	h, _ := resolvingHarness()
	h.verdict(vip, true, false)
	base := h.now
	h.g.Observe(vip, Claim{MAC: foreign})
	h.now = base.Add(10 * time.Millisecond)
	h.g.Observe(vip, Claim{MAC: stranger2})
	h.now = base.Add(20 * time.Millisecond)
	h.g.Observe(vip, Claim{MAC: stranger2})
	h.now = base.Add(30 * time.Millisecond)
	h.g.Round() // the first probe
	sent := h.g.vips[vip].probes.sent
	h.now = base.Add(40 * time.Millisecond)
	h.g.Observe(vip, Claim{MAC: foreign}) // answers it
	h.now = base.Add(200 * time.Millisecond)
	h.g.Round()
	p, c := h.g.vips[vip].probes, h.g.vips[vip].others.claim
	if !p.counted.Equal(sent) || p.quiet != 0 || c.MAC.String() != foreign.String() || !c.Last.Equal(base.Add(40*time.Millisecond)) {
		t.Fatalf("probe counted %v quiet %d, claim %v last %v: want answered, the first host's claim latest",
			p.counted.Equal(sent), p.quiet, c.MAC, c.Last.Sub(base))
	}
}

// TestNoProbeReplacesOneWhoseAnswerIsHeld: a probe whose answer is held back
// is not replaced by the next before it is counted: the next goes once the
// wait is settled.
func TestNoProbeReplacesOneWhoseAnswerIsHeld(t *testing.T) {
	h := newHarness()
	h.verdict(vip, false, false)
	h.advance(0) // a probe; the next in ProbeEvery
	sent := h.g.vips[vip].probes.sent
	k := knownOf(h)
	h.g.id = k
	h.now = sent.Add(ProbeEvery - 40*time.Millisecond)
	k.Heard(peerA, 0)
	h.g.Observe(vip, Claim{MAC: foreign}) // held until sent+ProbeEvery+60ms
	if next := h.advance(40 * time.Millisecond); !next.Equal(sent.Add(ProbeEvery + 60*time.Millisecond)) {
		t.Fatalf("next round at %v, want the wait's end", next.Sub(sent))
	}
	if p := h.g.vips[vip].probes; !p.sent.Equal(sent) {
		t.Fatal("a probe replaced the one whose answer is held")
	}
	h.advance(60 * time.Millisecond)
	if p := h.g.vips[vip].probes; !p.counted.Equal(sent) || p.quiet != 0 || !p.sent.After(sent) {
		t.Fatalf("after the wait %+v: want the first counted answered and the next sent", p)
	}
}

// TestKnownMemberIsNotHeld: a router of ours known as one is never held
// back: its announcement is contested at once while a stranger's frame
// waits.
func TestKnownMemberIsNotHeld(t *testing.T) {
	h, k := resolvingHarness()
	k.Heard(peerB, 0)
	k.Neigh(peerB, member)
	h.verdict(vip, true, true)
	h.g.Observe(vip, Claim{MAC: foreign})
	h.g.Observe(vip, Claim{MAC: member, Announced: true})
	if h.n(); len(h.contested) != 1 || h.members != 1 || len(h.g.vips[vip].others.held.frames) != 1 {
		t.Fatalf("contested %v, member answers %d, held %+v: want the member's contested and noted at once, only the stranger's held",
			h.contested, h.members, h.g.vips[vip].others.held)
	}
}

// TestHeldFramesAndTheVerdict: the verdict on frames held back: a VIP whose
// wire fails for long is not checked, and they go with its claims; a wait
// whose deadline passed is settled by the next judgement, not left to the
// next round.
func TestHeldFramesAndTheVerdict(t *testing.T) {
	for _, c := range []struct {
		name string
		then func(*harness)
		want bind.Check
	}{
		{"unchecked", func(h *harness) { h.g.vips[vip].wire.unchecked = true }, bind.Clear},
		{"past the deadline", func(h *harness) { h.now = h.now.Add(ResolveGrace) }, bind.Claimed},
	} {
		h, _ := resolvingHarness()
		h.g.Observe(vip, Claim{MAC: foreign})
		c.then(h)
		if v := h.verdict(vip, true, false); v != c.want || h.g.vips[vip].others.held != nil {
			t.Fatalf("%s: verdict %v, held %+v: want %v, nothing held", c.name, v, h.g.vips[vip].others.held, c.want)
		}
	}
}

// TestEveryFrameWaitsWhileAnyDoes: a claim counts at once when no member is
// being resolved. While one is, every frame from a host not known as ours
// waits, a counted claimant's too: a probe it answers is not counted
// unanswered for an older frame of another host replayed after it.
func TestEveryFrameWaitsWhileAnyDoes(t *testing.T) {
	h := newHarness()
	k := knownOf(h)
	h.g.id = k
	h.verdict(vip, true, false)
	h.g.Observe(vip, Claim{MAC: foreign})
	if h.g.vips[vip].others.claim == nil {
		t.Fatal("no member being resolved: the claim must count at once")
	}
	h.verdict(vip, true, false)
	h.now = h.now.Add(300 * time.Millisecond)
	k.Heard(peerA, 0)
	h.g.Observe(vip, Claim{MAC: stranger2}) // held
	h.now = h.now.Add(5 * time.Millisecond)
	h.g.Round() // a probe (BlockedEvery passed)
	sent := h.g.vips[vip].probes.sent
	h.now = h.now.Add(5 * time.Millisecond)
	h.g.Observe(vip, Claim{MAC: foreign}) // the claimant answers it: held behind the other
	h.now = h.now.Add(200 * time.Millisecond)
	h.g.Round()
	p, c := h.g.vips[vip].probes, h.g.vips[vip].others.claim
	if !p.counted.Equal(sent) || p.quiet != 0 || c.MAC.String() != foreign.String() {
		t.Fatalf("probe counted %v quiet %d, claim %v: want counted answered, the claimant's claim latest", p.counted.Equal(sent), p.quiet, c.MAC)
	}
}

// TestFloodEndsTheWait: past maxHeld frames held back the wait ends: they
// count at once, in order, and the next after them.
func TestFloodEndsTheWait(t *testing.T) {
	h, _ := resolvingHarness()
	for i := range maxHeld + 1 {
		h.g.Observe(vip, Claim{MAC: net.HardwareAddr{2, 1, 0, 0, 0, byte(i)}})
	}
	o := h.g.vips[vip].others
	if o.held != nil || o.claim.MAC.String() != (net.HardwareAddr{2, 1, 0, 0, 0, maxHeld}).String() ||
		o.replaced.MAC.String() != (net.HardwareAddr{2, 1, 0, 0, 0, maxHeld - 1}).String() {
		t.Fatalf("held %+v, claim %v after %v: want none held, the last frame's claim after the one before", o.held, o.claim.MAC, o.replaced.MAC)
	}
}

// TestHeldFrameBeforeTheBindIsAClaim: a frame held back that came before the
// VIP was bound here is a claim, as it would have been at once: never
// defended against.
func TestHeldFrameBeforeTheBindIsAClaim(t *testing.T) {
	h, _ := resolvingHarness()
	h.g.vips[vip].probes.checked = true
	h.verdict(vip, true, false) // clear: the loop binds it
	h.now = h.now.Add(time.Millisecond)
	h.g.Observe(vip, Claim{MAC: foreign}) // before the bind
	h.now = h.now.Add(time.Millisecond)
	h.verdict(vip, true, true)
	h.now = h.now.Add(ResolveGrace)
	h.g.Round()
	if v := h.verdict(vip, true, true); v != bind.Claimed || h.n().defences != 0 {
		t.Fatalf("a frame that came before the bind: %v with %d defences, want claimed, none", v, h.defences)
	}
}

// TestHeldFrameCountsAsOfItsTime: a frame held back counts as of when it
// came: a second answer within DefendInterval of the defence by its own time
// releases the VIP though it is settled after; the election is told of it
// with that time.
func TestHeldFrameCountsAsOfItsTime(t *testing.T) {
	h := newHarness()
	k := knownOf(h)
	h.g.id = k
	h.verdict(vip, true, true)
	h.g.Observe(vip, Claim{MAC: foreign}) // defended at once: no member to resolve
	h.now = h.now.Add(DefendInterval - 50*time.Millisecond)
	k.Heard(peerB, 0)
	came := h.now
	h.g.Observe(vip, Claim{MAC: foreign}) // held
	h.now = h.now.Add(ResolveGrace)
	h.g.Notes()
	h.g.Round()
	var at time.Time
	for _, n := range h.g.Notes() {
		if n.Kind == Served {
			at = n.At
		}
	}
	if v := h.verdict(vip, true, true); v != bind.Claimed {
		t.Fatalf("a second answer within DefendInterval of the defence, settled after it: %v, want claimed", v)
	}
	if !at.Equal(came) {
		t.Fatalf("the election told of an answer at %v, want when it came (%v)", at, came)
	}
}
