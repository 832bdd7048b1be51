package acd

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/bind"
)

var (
	vip     = netip.MustParseAddr("192.0.2.100")
	selfMAC = net.HardwareAddr{2, 0, 0, 0, 0, 1}
	member  = net.HardwareAddr{2, 0, 0, 0, 0, 2}
	foreign = net.HardwareAddr{2, 0, 0, 0, 0, 9}
	// stranger2 is a second host not of our group.
	stranger2 = net.HardwareAddr{2, 0, 0, 0, 0, 8}
)

// fakeWire counts probes.
type fakeWire struct {
	mu     sync.Mutex
	probes int
}

func (w *fakeWire) Probe() error         { w.mu.Lock(); w.probes++; w.mu.Unlock(); return nil }
func (w *fakeWire) Read() (Claim, error) { select {} }
func (w *fakeWire) Close() error         { return nil }
func (w *fakeWire) count() int           { w.mu.Lock(); defer w.mu.Unlock(); return w.probes }

type fakeIdentity struct{}

func (fakeIdentity) Ours(mac net.HardwareAddr) bool {
	return mac.String() == selfMAC.String() || mac.String() == member.String()
}
func (fakeIdentity) Self(mac net.HardwareAddr) bool { return mac.String() == selfMAC.String() }
func (fakeIdentity) Refresh()                       {}
func (fakeIdentity) Resolving() time.Time           { return time.Time{} }

// harness is a guard on a manual clock with its wire installed.
type harness struct {
	g   *Guard
	w   *fakeWire
	now time.Time
	// The guard's notes so far (n): Changed, Contested, Defend, and
	// Served (members: those for a router of ours).
	changed, defences, served, members int
	contested                          []netip.Addr
}

// n takes the guard's notes into the harness's counts and returns it.
func (h *harness) n() *harness {
	for _, n := range h.g.Notes() {
		switch n.Kind {
		case Changed:
			h.changed++
		case Contested:
			h.contested = append(h.contested, n.VIP)
		case Defend:
			h.defences++
		case Served:
			h.served++
			if n.Member {
				h.members++
			}
		}
	}
	return h
}

func newHarness() *harness {
	h := &harness{w: &fakeWire{}, now: time.Unix(1000, 0)}
	h.g = NewGuard([]netip.Addr{vip}, nil, fakeIdentity{}, func() time.Time { return h.now },
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.g.Attach(vip, h.w)
	h.g.started = h.now.Add(-time.Hour) // settled
	return h
}

// verdict tells the guard what the reconcile step would (Tell) and reads
// its verdict, as the step does.
func (h *harness) verdict(vip netip.Addr, want, bound bool) bind.Check {
	h.g.Tell(vip, want, bound)
	return h.g.Verdict(vip)
}

func (h *harness) advance(d time.Duration) time.Time {
	h.now = h.now.Add(d)
	return h.g.Round()
}

func TestProbesEverySecondAndBindsOnlyAfterAnUnansweredProbe(t *testing.T) {
	h := newHarness()
	if h.verdict(vip, true, false) == bind.Clear {
		t.Fatal("never probed: must not be bound yet")
	}
	next := h.advance(0)
	if h.w.count() != 1 || next.Sub(h.now) != AnswerWait || (h.verdict(vip, true, false) == bind.Clear) {
		t.Fatalf("%d probes, next in %v (want 1, %v), or allowed before the answer wait", h.w.count(), next.Sub(h.now), AnswerWait)
	}
	h.advance(AnswerWait)
	if h.n().changed != 1 || !(h.verdict(vip, true, false) == bind.Clear) {
		t.Fatalf("unanswered probe: changed %d, must be allowed", h.n().changed)
	}
	h.verdict(vip, false, false)
	h.advance(ProbeEvery)
	if h.w.count() != 2 {
		t.Fatalf("backup after a second: %d probes, want 2", h.w.count())
	}
	// A takeover: the latest probe went unanswered, so bind at once.
	if !(h.verdict(vip, true, false) == bind.Clear) {
		t.Fatal("a takeover must not wait for a probe")
	}
	h.advance(ProbeEvery)
	if h.w.count() != 3 || h.n().changed != 1 {
		t.Fatalf("holder: %d probes (want 3: it probes too), changed %d (want no wake-up)", h.w.count(), h.n().changed)
	}
}

// TestVerdictOnlyReads: Verdict returns what the latest Tell judged and
// changes nothing; a VIP never judged is Unprobed, one the guard does not
// check is Clear.
func TestVerdictOnlyReads(t *testing.T) {
	h := newHarness()
	if v := h.g.Verdict(vip); v != bind.Unprobed {
		t.Fatalf("never judged: %v, want unprobed", v)
	}
	h.advance(0)
	h.now = h.now.Add(AnswerWait) // the probe went unanswered
	if v := h.g.Verdict(vip); v != bind.Unprobed {
		t.Fatalf("read after an unanswered probe: %v, want unprobed until a Tell judges it", v)
	}
	h.g.Tell(vip, true, false)
	if v := h.g.Verdict(vip); v != bind.Clear {
		t.Fatalf("judged after an unanswered probe: %v, want clear", v)
	}
	h.g.Observe(vip, Claim{MAC: foreign})
	if v := h.g.Verdict(vip); v != bind.Clear {
		t.Fatalf("read after another host's answer: %v, want clear until a Tell judges it", v)
	}
	h.g.Tell(vip, true, false)
	if v, again := h.g.Verdict(vip), h.g.Verdict(vip); v != bind.Claimed || again != v {
		t.Fatalf("judged after another host's answer: %v then %v, want claimed", v, again)
	}
	if v := h.g.Verdict(netip.MustParseAddr("192.0.2.200")); v != bind.Clear {
		t.Fatalf("a VIP the guard does not check: %v, want clear", v)
	}
}

func TestBoundVIPStaysAtStart(t *testing.T) {
	h := newHarness()
	if !(h.verdict(vip, true, false) != bind.Claimed) {
		t.Fatal("a VIP bound at start (resumed) must stay while nobody else answers")
	}
}

func TestOwnAndMembersAnswersAreNoConflict(t *testing.T) {
	h := newHarness()
	h.verdict(vip, false, false)
	h.advance(0)
	h.g.Observe(vip, Claim{MAC: selfMAC})
	h.g.Observe(vip, Claim{MAC: member}) // a master handing over still holds the VIP
	h.now = h.now.Add(AnswerWait)
	if !(h.verdict(vip, true, false) == bind.Clear) || len(h.g.Conflicts()) != 0 || h.g.Detected.Load() != 0 {
		t.Fatalf("ours and members' answers blocked the VIP: %v", h.g.Conflicts())
	}
}

func TestForeignHostBlocksUntilProbesGoUnanswered(t *testing.T) {
	h := newHarness()
	h.verdict(vip, false, false)
	h.advance(0)
	h.g.Observe(vip, Claim{MAC: foreign}) // answers the backup's probe
	if h.verdict(vip, true, false) == bind.Clear {
		t.Fatal("elected while another host answers: must not bind")
	}
	// Blocked: probed every BlockedEvery while it answers.
	next := h.advance(0)
	if h.w.count() != 1 || next.Sub(h.now) != BlockedEvery {
		t.Fatalf("blocked: %d probes, next in %v; want 1 and %v", h.w.count(), next.Sub(h.now), BlockedEvery)
	}
	next = h.advance(BlockedEvery)
	if h.w.count() != 2 || next.Sub(h.now) != AnswerWait {
		t.Fatalf("blocked: %d probes, next in %v; want 2 and %v", h.w.count(), next.Sub(h.now), AnswerWait)
	}
	h.now = h.now.Add(time.Millisecond)
	h.g.Observe(vip, Claim{MAC: foreign})
	h.advance(AnswerWait - time.Millisecond)
	if h.verdict(vip, true, false) == bind.Clear {
		t.Fatal("answered again: must stay blocked")
	}
	if c := h.g.Conflicts(); len(c) != 1 || c[0].MAC.String() != foreign.String() || h.g.Detected.Load() != 1 {
		t.Fatalf("conflicts %v, detected %d", c, h.g.Detected.Load())
	}
	// It lets go: FreeAfter probes in a row go unanswered.
	for k := range FreeAfter {
		next = h.advance(BlockedEvery - AnswerWait)
		if h.w.count() != 3+k || next.Sub(h.now) != AnswerWait || (h.verdict(vip, true, false) == bind.Clear) {
			t.Fatalf("probe sent: %d probes, next in %v, or allowed before the answer wait", h.w.count(), next.Sub(h.now))
		}
		changed := h.n().changed
		h.advance(AnswerWait)
		if h.n().changed != changed+1 {
			t.Fatal("the end of the answer wait must wake the loop")
		}
		if free := (h.verdict(vip, true, false) == bind.Clear); free != (k == FreeAfter-1) {
			t.Fatalf("after %d unanswered probes: allowed %v", k+1, free)
		}
	}
	if len(h.g.Conflicts()) != 0 {
		t.Fatal("the conflict must be over")
	}
}

func TestForeignClaimWhileHoldingReleases(t *testing.T) {
	h := newHarness()
	if !(h.verdict(vip, true, false) != bind.Claimed) {
		t.Fatal("not allowed")
	}
	h.g.Observe(vip, Claim{MAC: foreign}) // its gratuitous ARP
	if h.n().changed != 1 || (h.verdict(vip, true, false) != bind.Claimed) {
		t.Fatalf("a foreign claim while holding: changed %d, still allowed", h.n().changed)
	}
}

func TestUnknownVIPIsAllowed(t *testing.T) {
	h := newHarness()
	if !(h.verdict(netip.MustParseAddr("2001:db8::1"), true, false) == bind.Clear) {
		t.Fatal("a VIP without a guard must be allowed")
	}
}

func TestSettleThenForgetMembers(t *testing.T) {
	h := newHarness()
	h.g.Settle, h.g.started = time.Second, h.now
	h.g.Observe(vip, Claim{MAC: foreign})
	if next := h.advance(0); h.w.count() != 0 || len(h.g.Conflicts()) != 0 || !next.Equal(h.g.started.Add(time.Second)) {
		t.Fatalf("settling: %d probes, conflicts %v, next %v", h.w.count(), h.g.Conflicts(), next)
	}
	h.advance(time.Second)
	if h.w.count() != 1 {
		t.Fatalf("settled: %d probes, want 1", h.w.count())
	}
	// A member's answer judged before its advertisement named it.
	h.g.Observe(vip, Claim{MAC: foreign})
	h.g.id = memberToo{}
	h.advance(0)
	if len(h.g.Conflicts()) != 0 {
		t.Fatal("a conflict with a host since known as a member must be dropped")
	}
}

type memberToo struct{ fakeIdentity }

func (memberToo) Ours(net.HardwareAddr) bool { return true }

// failingWire cannot send.
type failingWire struct{ fakeWire }

func (w *failingWire) Probe() error { w.fakeWire.Probe(); return errors.New("network is down") }

func TestFailingWireIsRetriedOnSchedule(t *testing.T) {
	h := newHarness()
	w := &failingWire{}
	h.g.Attach(vip, w)
	next := h.advance(0)
	if w.count() != 1 || next.Sub(h.now) != ProbeEvery {
		t.Fatalf("%d attempts, next in %v; want 1 and %v (not at once)", w.count(), next.Sub(h.now), ProbeEvery)
	}
	if h.verdict(vip, true, false) == bind.Clear {
		t.Fatal("a probe that was never sent must not allow the VIP")
	}
}

// TestClaimOnAWireThatCannotReopenIsDropped: a fault in the check never
// keeps the VIP down. Issue 32 finding 5: a claim outstanding when the
// wire stopped working stayed, and the VIP with it, for good.
func TestClaimOnAWireThatCannotReopenIsDropped(t *testing.T) {
	h := newHarness()
	h.g.Observe(vip, Claim{MAC: foreign})
	if v := h.verdict(vip, true, false); v != bind.Claimed {
		t.Fatalf("verdict %v, want claimed", v)
	}
	h.g.Attach(vip, &failingWire{})
	for range 12 {
		h.advance(ProbeEvery)
	}
	if v := h.verdict(vip, true, false); v != bind.Clear || len(h.g.Conflicts()) != 0 {
		t.Fatalf("after %v of a failing wire: verdict %v, conflicts %v; want clear, none", UncheckedAfter, v, h.g.Conflicts())
	}
}

// TestLinkChangeVoidsEarlierProbes: a VIP is bound again after a link
// change only once a probe on the link as it is now went unanswered (RFC
// 5227 section 2.1): a silent host that took the VIP while our link was
// down answers it. The simulation found it (seed 31): a master whose
// carrier flapped bound the VIP on a probe from before the flap.
func TestLinkChangeVoidsEarlierProbes(t *testing.T) {
	h := newHarness()
	h.advance(0)
	h.advance(AnswerWait)
	if v := h.verdict(vip, true, false); v != bind.Clear {
		t.Fatalf("after an unanswered probe: %v, want clear", v)
	}
	n := h.w.count()
	h.g.LinkChanged() // carrier back
	if v := h.verdict(vip, true, false); v != bind.Unprobed {
		t.Fatalf("after the link changed: %v, want unprobed", v)
	}
	h.advance(0)
	if h.w.count() != n+1 {
		t.Fatal("a link that changed must be probed at once")
	}
	h.advance(AnswerWait)
	if v := h.verdict(vip, true, false); v != bind.Clear {
		t.Fatalf("after the new probe went unanswered: %v, want clear", v)
	}
}

// TestUncheckedWakesTheLoop: a VIP that becomes unchecked while this node
// should hold it is decided at once, not at the next periodic pass (the
// simulation, seed 717).
func TestUncheckedWakesTheLoop(t *testing.T) {
	h := newHarness()
	h.verdict(vip, true, false)
	h.g.Attach(vip, &failingWire{})
	before := h.n().changed
	for range 11 {
		h.advance(ProbeEvery)
	}
	if h.n().changed == before {
		t.Fatal("the verdict turned clear (unchecked) without waking the loop")
	}
}

// A member announcing a VIP this node should hold is contested (the
// holder announces again), once a ProbeEvery; its answers to our probes
// (only we hear them), our own frames, a VIP this node should not hold,
// and a stranger (a conflict) are not.
func TestMemberAnnouncingOurVIPIsContested(t *testing.T) {
	h := newHarness()
	h.g.Observe(vip, Claim{MAC: member, Announced: true})
	if len(h.n().contested) != 0 {
		t.Fatalf("contested %v while this node should not hold the VIP", h.n().contested)
	}
	h.verdict(vip, true, true)
	h.g.Observe(vip, Claim{MAC: selfMAC, Announced: true})
	h.g.Observe(vip, Claim{MAC: member}) // an answer to our probe
	if len(h.n().contested) != 0 {
		t.Fatalf("contested %v on our own frame or a member's answer to our probe", h.n().contested)
	}
	h.g.Observe(vip, Claim{MAC: member, Announced: true})
	h.g.Observe(vip, Claim{MAC: member, Announced: true})
	if len(h.n().contested) != 1 || h.n().contested[0] != vip {
		t.Fatalf("contested %v; want %v once", h.n().contested, vip)
	}
	h.advance(ProbeEvery)
	h.g.Observe(vip, Claim{MAC: member, Announced: true})
	h.g.Observe(vip, Claim{MAC: foreign, Announced: true})
	if len(h.n().contested) != 2 {
		t.Fatalf("contested %d times; want 2: again after ProbeEvery, not for a stranger", len(h.n().contested))
	}
}

// A VIP this node holds is defended against another host's first answer
// (RFC 5227 section 2.4 (b): announced again, kept); a second answer
// within DefendInterval releases it; a VIP not yet bound is never bound
// while another host answers.
func TestHeldVIPIsDefendedOnce(t *testing.T) {
	h := newHarness()
	h.g.DefendWait = 700 * time.Millisecond
	h.verdict(vip, true, true)
	h.advance(0) // a probe, unanswered
	h.advance(AnswerWait)
	if v := h.verdict(vip, true, true); v != bind.Clear {
		t.Fatalf("verdict %v before any answer", v)
	}
	h.g.Observe(vip, Claim{MAC: foreign}) // a backup's gratuitous ARP before its advertisement, say
	if v := h.verdict(vip, true, true); v != bind.Defended || h.n().defences != 1 {
		t.Fatalf("after one answer: %v, %d defences; want defended, 1", v, h.n().defences)
	}
	if len(h.g.Conflicts()) != 0 {
		t.Fatal("a defended answer is not a reported conflict")
	}
	// No probe while the host we defended against may still let go: our
	// probe would make its second answer.
	probes := h.w.count()
	if next := h.advance(0); h.w.count() != probes || next.Before(h.now.Add(h.g.DefendWait)) {
		t.Fatalf("probed (%d→%d) or next probe at %v, before DefendWait %v", probes, h.w.count(), next.Sub(h.now), h.g.DefendWait)
	}
	h.advance(time.Second)
	h.g.Observe(vip, Claim{MAC: foreign})
	if v := h.verdict(vip, true, true); v != bind.Claimed || h.n().defences != 1 {
		t.Fatalf("after a second answer: %v, %d defences; want claimed, 1", v, h.n().defences)
	}
	if hold, _ := bind.Decide(bind.Inputs{Election: bind.Elected, Check: bind.Claimed, Bound: true}); hold {
		t.Fatal("a claimed VIP must be released")
	}
	// Quiet long enough: free; a new answer past DefendInterval is defended again.
	for range 40 {
		h.advance(50 * time.Millisecond)
		h.verdict(vip, true, true)
	}
	h.advance(DefendInterval)
	if v := h.verdict(vip, true, true); v != bind.Clear {
		t.Fatalf("verdict %v after the other host went quiet", v)
	}
	h.g.Observe(vip, Claim{MAC: foreign})
	if v := h.verdict(vip, true, true); v != bind.Defended || h.n().defences != 2 {
		t.Fatalf("after DefendInterval: %v, %d defences; want defended, 2", v, h.n().defences)
	}

	u := newHarness() // elected, not bound: never bound while another host answers
	u.verdict(vip, true, false)
	u.g.Observe(vip, Claim{MAC: foreign})
	if v := u.verdict(vip, true, false); v != bind.Claimed || u.n().defences != 0 {
		t.Fatalf("verdict %v for a VIP not bound another host answers for", v)
	}
	if hold, _ := bind.Decide(bind.Inputs{Election: bind.Elected, Check: bind.Defended, Bound: false}); hold {
		t.Fatal("a defended VIP not bound must not be bound")
	}
	if hold, _ := bind.Decide(bind.Inputs{Election: bind.Elected, Check: bind.Defended, Bound: true}); !hold {
		t.Fatal("a defended VIP bound must be kept")
	}
}

// TestProbeNowAndServed: a backup's ask probes at once, however recent the
// last probe; another host's answer or announcement is Served — a
// member's, and a stranger's (a backup that started after its master went
// silent never heard it advertise) — ours is not.
func TestProbeNowAndServed(t *testing.T) {
	h := newHarness()
	h.verdict(vip, false, false)
	h.advance(0)
	if h.w.count() != 1 {
		t.Fatalf("%d probes, want 1", h.w.count())
	}
	h.g.ProbeNow()
	h.advance(10 * time.Millisecond)
	if h.w.count() != 2 {
		t.Fatalf("asked 10 ms after a probe: %d probes, want 2", h.w.count())
	}
	for _, c := range []struct {
		claim         Claim
		want, members int
	}{
		{Claim{MAC: member}, 1, 1},
		{Claim{MAC: member, Announced: true}, 2, 2},
		{Claim{MAC: selfMAC, Announced: true}, 2, 2},
		{Claim{MAC: foreign}, 3, 2},
	} {
		h.g.Observe(vip, c.claim)
		if h.n(); h.served != c.want || h.members != c.members {
			t.Fatalf("after %s (announced %v): served %d times, %d as a member; want %d, %d", c.claim.MAC, c.claim.Announced, h.served, h.members, c.want, c.members)
		}
	}
}

// TestProbeNowDoesNotHoldATakeover: the asking probe is not the latest of
// the verdict: a takeover a moment after it binds at once, as after the
// periodic probe a second before (the bench: 100 ms more at a link cut
// when it waited for the asking probe's answer).
func TestProbeNowDoesNotHoldATakeover(t *testing.T) {
	h := newHarness()
	h.verdict(vip, false, false)
	h.advance(0)
	h.advance(AnswerWait)
	h.g.ProbeNow()
	h.advance(500 * time.Millisecond)
	if h.w.count() != 2 {
		t.Fatalf("%d probes, want the periodic one and the asked one", h.w.count())
	}
	h.now = h.now.Add(50 * time.Millisecond)
	if v := h.verdict(vip, true, false); v != bind.Clear {
		t.Fatalf("takeover 50 ms after the asking probe: %v, want clear at once", v)
	}
}
