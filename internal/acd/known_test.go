package acd

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/bind"
)

var (
	peerA = netip.MustParseAddr("192.0.2.11")
	peerB = netip.MustParseAddr("192.0.2.12")
)

// recorder records what a Known asks of the kernel.
type recorder struct {
	resolved []netip.Addr
}

func newKnown(peers ...netip.Addr) (*Known, *recorder) {
	r := &recorder{}
	return NewKnown(peers, nil, func(a netip.Addr) { r.resolved = append(r.resolved, a) }), r
}

// grown says whether k said it grew since last asked.
func grown(k *Known) bool {
	select {
	case <-k.Grew():
		return true
	default:
		return false
	}
}

// follow hands a growth of k to g, as the daemon's relay does.
func follow(k *Known, g *Guard) {
	if grown(k) {
		g.Rejudge()
	}
}

// TestOwnInterfacesAreOurs: every interface of this host is ours, and
// stays so whatever the neighbour table does; an interface deleted is not.
func TestOwnInterfacesAreOurs(t *testing.T) {
	k, _ := newKnown()
	k.SetLink(2, selfMAC)
	k.Neigh(peerA, selfMAC) // a neighbour entry naming our own MAC changes nothing
	k.Neigh(peerA, foreign)
	if !k.Ours(selfMAC) {
		t.Fatal("our own interface's MAC must be ours")
	}
	k.DelLink(2)
	if k.Ours(selfMAC) {
		t.Fatal("a deleted interface's MAC must not stay ours")
	}
}

// TestConfiguredPeersAreMembers: issue 32 finding 6 — a master hears no
// advertisement, so configured unicast peers are members from the start.
func TestConfiguredPeersAreMembers(t *testing.T) {
	k, _ := newKnown(peerA)
	k.Neigh(peerA, member)
	if !k.Ours(member) {
		t.Fatal("a configured peer's MAC must be ours without an advertisement heard")
	}
	if !grown(k) {
		t.Fatal("did not say it grew (the guard judges its claims again)")
	}
}

// TestStrangerCostsALookup: a frame from a stranger is judged by a lookup;
// nothing is asked of the kernel and nothing deleted (finding 6: every
// such frame dumped the neighbour table twice, deleted the members'
// entries and blocked the reader up to 200 ms).
func TestStrangerCostsALookup(t *testing.T) {
	k, r := newKnown(peerA)
	k.Neigh(peerA, member)
	for range 1000 {
		if k.Ours(foreign) {
			t.Fatal("a stranger is not ours")
		}
	}
	if len(r.resolved) != 0 {
		t.Fatalf("asked the kernel %d times for a stranger's frames", len(r.resolved))
	}
}

// TestHeardMembersStay: members heard advertising are not forgotten with
// time, more than 16 are known, and a deleted neighbour entry keeps its
// MAC (finding 6: forgotten after 10 minutes, capped at 16).
func TestHeardMembersStay(t *testing.T) {
	k, r := newKnown()
	var macs []net.HardwareAddr
	for i := range 40 {
		ip := netip.AddrFrom4([4]byte{192, 0, 2, byte(20 + i)})
		mac := net.HardwareAddr{2, 0, 0, 0, 1, byte(i)}
		k.Heard(ip, 0)
		k.Neigh(ip, mac)
		macs = append(macs, mac)
	}
	for i, mac := range macs {
		if !k.Ours(mac) {
			t.Fatalf("member %d's MAC %s is not ours", i, mac)
		}
	}
	if len(r.resolved) != 40 {
		t.Fatalf("resolved %d new members, want each once (40)", len(r.resolved))
	}
	k.Heard(netip.MustParseAddr("192.0.2.20"), 0)
	if len(r.resolved) != 40 {
		t.Fatal("a member heard again with an entry is not resolved again")
	}
	k.Heard(netip.MustParseAddr("192.0.2.200"), 0)
	k.Heard(netip.MustParseAddr("192.0.2.200"), 0)
	if len(r.resolved) != 42 {
		t.Fatalf("resolved %d, want 42: a member without an entry is resolved at each advertisement until it has one", len(r.resolved))
	}
}

// TestMemberFloodEvictsOldestHeardNotPeers: forged advertisements from
// many sources evict the least recently heard, never a configured peer.
func TestMemberFloodEvictsOldestHeardNotPeers(t *testing.T) {
	k, _ := newKnown(peerA)
	k.Neigh(peerA, member)
	k.Heard(peerB, 0)
	k.Neigh(peerB, foreign)
	for i := range maxHeard + 10 {
		k.Heard(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), 0)
	}
	if !k.Ours(member) {
		t.Fatal("a configured peer must survive a flood")
	}
	if k.Ours(foreign) {
		t.Fatal("the least recently heard member must be evicted by a flood")
	}
}

// TestMemberNewMAC: a member whose interface was made again has a new MAC:
// the new entry makes it ours, the old one is not any more.
func TestMemberNewMAC(t *testing.T) {
	k, _ := newKnown()
	k.Heard(peerA, 0)
	k.Neigh(peerA, member)
	if !grown(k) {
		t.Fatal("the first entry: did not say it grew")
	}
	newMAC := net.HardwareAddr{2, 0, 0, 0, 0, 7}
	k.Neigh(peerA, newMAC)
	if !k.Ours(newMAC) || k.Ours(member) {
		t.Fatalf("after the new entry: new ours %v, old ours %v", k.Ours(newMAC), k.Ours(member))
	}
	if !grown(k) {
		t.Fatal("the new entry: did not say it grew")
	}
}

// TestRefreshResolvesOnlyTheUnresolved: Refresh asks the kernel for the
// members without an entry, nothing else.
func TestRefreshResolvesOnlyTheUnresolved(t *testing.T) {
	k, r := newKnown(peerA, peerB)
	k.Neigh(peerA, member)
	k.Refresh()
	if !slices.Equal(r.resolved, []netip.Addr{peerB}) {
		t.Fatalf("resolved %v, want [%s]", r.resolved, peerB)
	}
}

// heardNotResolved is a guard whose identity heard peerA advertise, its
// neighbour entry not yet there, after a probe went unanswered.
func heardNotResolved() (*harness, *Known) {
	h := newHarness()
	k := knownOf(h)
	h.g.id = k
	k.Heard(peerA, 0)
	follow(k, h.g)
	h.advance(0)
	h.advance(AnswerWait) // a probe went unanswered
	return h, k
}

// TestClaimOfAMemberLearnedLaterIsDropped: an answer judged before the
// member's entry arrived (two nodes became master at once) is a conflict
// until the entry arrives; then the guard, told, drops it at once.
func TestClaimOfAMemberLearnedLaterIsDropped(t *testing.T) {
	h, k := heardNotResolved()
	h.g.Observe(vip, Claim{MAC: member})
	if v := h.verdict(vip, true, false); v != bind.Claimed {
		t.Fatalf("before the member's entry: %v, want claimed", v)
	}
	k.Neigh(peerA, member)
	follow(k, h.g)
	select {
	case <-h.g.wake:
	default:
		t.Fatal("a MAC that became ours must wake the guard")
	}
	h.advance(0)
	if v := h.verdict(vip, true, false); v != bind.Clear || len(h.g.Conflicts()) != 0 {
		t.Fatalf("after the member's entry: %v, conflicts %v; want clear at once (the simulation, seed 12062: it waited for a probe)", v, fmt.Sprint(h.g.Conflicts()))
	}
	if h.n().changed == 0 {
		t.Fatal("the loop was not woken when the claim went")
	}
}

// TestBackupSeesAMemberBeforeItsEntry: a backup that sees a new master's
// announcement before the master's MAC is known reports nothing, and drops
// the claim when the MAC arrives; a claim confirmed by a later probe's
// answer is reported.
func TestBackupSeesAMemberBeforeItsEntry(t *testing.T) {
	h := newHarness()
	k := knownOf(h)
	h.g.id = k
	h.verdict(vip, false, false) // a backup
	h.g.Observe(vip, Claim{MAC: member})
	if len(h.g.Conflicts()) != 0 || h.g.Detected.Load() != 0 {
		t.Fatalf("reported %v before it mattered", h.g.Conflicts())
	}
	k.Heard(peerA, 0)
	k.Neigh(peerA, member)
	h.advance(0)
	if len(h.g.Conflicts()) != 0 || h.g.Detected.Load() != 0 {
		t.Fatalf("a member's claim: %v, detected %d", h.g.Conflicts(), h.g.Detected.Load())
	}
	h.g.Observe(vip, Claim{MAC: foreign})
	h.advance(ProbeEvery)                 // a probe goes out
	h.g.Observe(vip, Claim{MAC: foreign}) // and is answered
	if len(h.g.Conflicts()) != 1 || h.g.Detected.Load() != 1 {
		t.Fatalf("a stranger that answered our probe: %v, detected %d; want it reported", h.g.Conflicts(), h.g.Detected.Load())
	}
}

// TestNeighGoneResolvesAgain: an entry the kernel no longer has leaves its
// MAC ours, and the member is resolved again at its next advertisement, so
// a MAC it changed meanwhile is learned (the simulation, seed 25115: a
// member made its interface again while our table had no entry for it).
func TestNeighGoneResolvesAgain(t *testing.T) {
	k, r := newKnown()
	k.Heard(peerA, 0)
	k.Neigh(peerA, member)
	r.resolved = nil
	k.NeighGone(peerA)
	if !k.Ours(member) {
		t.Fatal("the latest MAC of a member must stay ours when its entry goes")
	}
	k.Heard(peerA, 0)
	if !slices.Equal(r.resolved, []netip.Addr{peerA}) {
		t.Fatalf("resolved %v after the entry went, want [%s]", r.resolved, peerA)
	}
	newMAC := net.HardwareAddr{2, 0, 0, 0, 0, 7}
	k.Neigh(peerA, newMAC)
	if !k.Ours(newMAC) || k.Ours(member) {
		t.Fatal("the entry resolved afresh replaces the member's MAC")
	}
}

// TestStrangersClaimOutlivesAMemberLearnedLater: a stranger answers, then
// a member whose entry has not arrived (a keepalived member taking over);
// when the entry comes, the member's answer is dropped and the stranger's
// is the conflict again (the simulation, seed 2999: it was forgotten with
// the member's and the stranger's address bound).
func TestStrangersClaimOutlivesAMemberLearnedLater(t *testing.T) {
	h, k := heardNotResolved()
	h.g.Observe(vip, Claim{MAC: foreign})
	h.g.Observe(vip, Claim{MAC: member, Announced: true})
	k.Neigh(peerA, member)
	follow(k, h.g)
	h.advance(0)
	if v := h.verdict(vip, true, false); v != bind.Claimed {
		t.Fatalf("after the member's entry: %v, want claimed (the stranger's answer)", v)
	}
	if cs := h.g.Conflicts(); len(cs) != 1 || !slices.Equal(cs[0].MAC, foreign) {
		t.Fatalf("conflicts %v, want the stranger's", fmt.Sprint(cs))
	}
}

// TestHeardMemberIsAMemberForAWhile: in multicast mode an advertisement
// makes its source a member (its answers for the VIP are the group's), but
// only for MemberFor after its latest one: a forged advertisement, or a
// router that left the group, does not exempt a host from the conflict
// check for good. A configured peer stays a member.
func TestHeardMemberIsAMemberForAWhile(t *testing.T) {
	now := time.Unix(1000, 0)
	forAWhile := MemberFor(200*time.Millisecond, 4*time.Second)
	k := NewKnown([]netip.Addr{peerB}, func() time.Time { return now }, nil)
	k.Neigh(peerA, member)
	k.Neigh(peerB, foreign)
	k.Heard(peerA, forAWhile)
	if !k.Ours(member) {
		t.Fatal("a router heard advertising must be a member")
	}
	now = now.Add(forAWhile)
	if !k.Ours(member) {
		t.Fatalf("a member heard %v ago must still be one", forAWhile)
	}
	k.Heard(peerA, forAWhile) // advertising again: counted from now
	now = now.Add(forAWhile)
	if !k.Ours(member) {
		t.Fatal("a member that advertised again must stay one")
	}
	now = now.Add(time.Millisecond)
	if k.Ours(member) {
		t.Fatalf("a host silent for %v must be a stranger again", forAWhile+time.Millisecond)
	}
	if !k.Ours(foreign) {
		t.Fatal("a configured peer must stay a member without advertising")
	}
	if got := forAWhile; got != 2*(4*time.Second+800*time.Millisecond) {
		t.Fatalf("MemberFor(200ms, 4s) = %v, want 9.6s", got)
	}
}

// knownOf is an identity on h's clock.
func knownOf(h *harness) *Known { return NewKnown(nil, func() time.Time { return h.now }, nil) }

// TestResolvingOnlyForAMemberFirstHeard: a member heard without an entry
// makes claims wait for ResolveGrace from its first advertisement, not
// from each (one that never resolves would hold every stranger back); its
// entry ends the wait at once; an entry gone starts one afresh.
func TestResolvingOnlyForAMemberFirstHeard(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := NewKnown(nil, func() time.Time { return now }, nil)
	if !k.Resolving().IsZero() {
		t.Fatal("resolving with no member heard")
	}
	k.Heard(peerA, 0)
	if got := k.Resolving(); !got.Equal(now.Add(ResolveGrace)) {
		t.Fatalf("first heard: resolving until %v, want %v", got, now.Add(ResolveGrace))
	}
	start := now
	now = now.Add(ResolveGrace / 2)
	k.Heard(peerA, 0)
	if got := k.Resolving(); !got.Equal(start.Add(ResolveGrace)) {
		t.Fatalf("heard again: resolving until %v, want the first's %v", got, start.Add(ResolveGrace))
	}
	now = start.Add(ResolveGrace)
	k.Heard(peerA, 0)
	if !k.Resolving().IsZero() {
		t.Fatal("still resolving after the grace")
	}
	k.Neigh(peerA, member)
	k.NeighGone(peerA)
	k.Heard(peerA, 0)
	if got := k.Resolving(); !got.Equal(now.Add(ResolveGrace)) {
		t.Fatalf("after the entry went: resolving until %v, want a fresh %v", got, now.Add(ResolveGrace))
	}
	k.Neigh(peerA, member)
	if !k.Resolving().IsZero() {
		t.Fatal("still resolving once the entry arrived")
	}
}

// TestNeighWithAKnownMACEndsTheWait: an entry arriving with a hardware
// address already ours ends a member's wait and wakes the guard (Grew), as
// a new one does.
func TestNeighWithAKnownMACEndsTheWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := NewKnown(nil, func() time.Time { return now }, nil)
	k.Heard(peerA, 0)
	k.Neigh(peerA, member)
	grown(k)
	k.NeighGone(peerA) // its MAC stays ours
	k.Heard(peerA, 0)
	k.Neigh(peerA, member)
	if !k.Resolving().IsZero() || !grown(k) {
		t.Fatal("an entry with a MAC already ours must end the wait and wake the guard")
	}
}

// TestForgottenMemberIsNotResolved: a member forgotten (its membership ran
// out, or a flood evicted it) is no longer resolved: the waits are bounded
// by the members remembered.
func TestForgottenMemberIsNotResolved(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := NewKnown(nil, func() time.Time { return now }, nil)
	for i := range maxHeard + 10 {
		k.Heard(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), time.Second)
	}
	if len(k.resolving) > maxHeard {
		t.Fatalf("%d members being resolved after a flood, want at most %d", len(k.resolving), maxHeard)
	}
	now = now.Add(2 * time.Second)
	k.Heard(peerA, 0) // the others' memberships ran out
	if len(k.resolving) != 1 {
		t.Fatalf("%d members being resolved, want only the one heard last", len(k.resolving))
	}
}

// TestResolvingLastsForTheLatestMember: the wait lasts for the member heard
// last: Resolving is the latest end.
func TestResolvingLastsForTheLatestMember(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := NewKnown(nil, func() time.Time { return now }, nil)
	k.Heard(peerA, 0)
	now = now.Add(ResolveGrace / 2)
	k.Heard(peerB, 0)
	if got := k.Resolving(); !got.Equal(now.Add(ResolveGrace)) {
		t.Fatalf("resolving until %v, want the later member's %v", got, now.Add(ResolveGrace))
	}
}
