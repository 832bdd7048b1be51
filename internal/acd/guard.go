package acd

import (
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/novaedge/cpvip/internal/bind"
)

// Probe timing.
const (
	// ProbeEvery is how often a node that does not hold a VIP probes it.
	ProbeEvery = time.Second
	// BlockedEvery is how often a VIP another host answers for is probed
	// while this node should hold it.
	BlockedEvery = 250 * time.Millisecond
	// AnswerWait is how long a probe's answer may take.
	AnswerWait = 150 * time.Millisecond
	// FreeAfter is how many probes in a row must go unanswered before a VIP
	// another host answered for is free: a loaded host can miss one answer.
	FreeAfter = 2
	// DefendInterval is RFC 5227's DEFEND_INTERVAL: a VIP this node holds
	// is defended against another host's answer (announced again) at most
	// once in it; another answer within it releases the VIP.
	DefendInterval = 10 * time.Second
)

// DefendWaitFor is Guard.DefendWait for a group whose master advertises
// every advert/sends: a router of ours that took the VIP on lost
// advertisements hears our next one within that, and lets go 100 ms later
// (vrrp's handover grace); 100 ms more of margin.
func DefendWaitFor(advert time.Duration, sends int) time.Duration {
	return advert/time.Duration(max(1, sends)) + 200*time.Millisecond
}

// Claim is a host claiming a VIP in a frame.
type Claim struct {
	MAC net.HardwareAddr
	// Announced: it told the segment (a gratuitous ARP, an unsolicited
	// neighbour advertisement), the neighbours heard it; not an answer to
	// a probe, which only the prober hears.
	Announced bool
}

// Wire probes the segment for one VIP and reads who claims it.
type Wire interface {
	// Probe asks the segment who has the VIP.
	Probe() error
	// Read returns the next host that answered for the VIP or announced it.
	Read() (Claim, error)
	Close() error
}

// Identity tells this host and our VRRP group from other hosts. Its
// methods never call the guard (it calls Ours and Resolving under its
// lock).
type Identity interface {
	// Ours says whether mac is an interface of this host or of a member
	// of our group.
	Ours(mac net.HardwareAddr) bool
	// Self says whether mac is an interface of this host.
	Self(mac net.HardwareAddr) bool
	// Refresh asks for the members' hardware addresses it lacks (before
	// probing); it must not block.
	Refresh()
	// Resolving returns until when a member heard a moment ago may still
	// be resolved (its claim judged before its hardware address is
	// known); zero: none.
	Resolving() time.Time
}

// Conflict is another host answering for a VIP.
type Conflict struct {
	VIP   netip.Addr
	MAC   net.HardwareAddr
	Since time.Time // its first answer
	Last  time.Time // its latest answer
	// defence: when this node defended the VIP against this host's answer
	// (zero: it did not); an answer after it, within DefendInterval of it,
	// makes the claim count.
	defence time.Time
	// reported: logged and counted. A claim is reported once it matters —
	// it keeps the VIP from this node — or a probe sent after its first
	// answer was answered by it too: a member's answer judged a moment
	// before its hardware address was known (a takeover seen by a backup
	// whose neighbour table lacked the new master) is dropped unreported.
	reported bool
}

// Guard judges whether another host answers for each VIP. Tell, Verdict and
// Conflicts may be called from any goroutine.
type Guard struct {
	open func(vip netip.Addr) (Wire, error)
	id   Identity
	now  func() time.Time
	log  *slog.Logger

	nmu   sync.Mutex // guards notes
	notes []Note     // not yet taken (Notes)
	noted chan struct{}

	mu     sync.Mutex
	vips   map[netip.Addr]*vipState
	closed bool // Run is ending: no new wires
	asked  bool // ProbeNow: the next round sends a probe of every VIP besides the schedule
	wake   chan struct{}

	// Settle is how long after Start the guard neither probes nor
	// judges answers: long enough to hear our group's first advertisement,
	// so that a member holding the VIP is known as one (set before Start).
	Settle    time.Duration
	started   time.Time // when Start was called; under mu
	refreshed time.Time // the latest Identity refresh of a round; under mu

	// DefendWait is how long after a defence the guard sends no probe for
	// the VIP (vipState.nextProbe): a router of ours that took it on lost
	// advertisements, its MAC unknown to us, lets go once it hears our next
	// advertisement and its grace is over. Set before Start.
	DefendWait time.Duration

	// Detected counts conflicts reported (one per episode); Defended, the
	// defences against a first answer.
	Detected, Defended atomic.Uint64
}

// NewGuard returns a guard for vips; open opens a VIP's wire. What it has
// to tell the rest of the node it notes (Notes).
func NewGuard(vips []netip.Addr, open func(netip.Addr) (Wire, error), id Identity,
	now func() time.Time, log *slog.Logger) *Guard {
	g := &Guard{open: open, id: id, now: now, log: log, noted: make(chan struct{}, 1),
		vips: map[netip.Addr]*vipState{}, wake: make(chan struct{}, 1)}
	for _, v := range vips {
		g.vips[v] = &vipState{verdict: bind.Unprobed}
	}
	return g
}

// Observe records that mac answered for vip or announced it. A frame of
// a host not known as ours waits while a member is resolved (wait).
func (g *Guard) Observe(vip netip.Addr, c Claim) {
	if g.settling() {
		return
	}
	if g.id.Self(c.MAC) {
		return
	}
	member := g.id.Ours(c.MAC)
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.vips[vip]
	if !ok {
		return
	}
	f := frame{mac: slices.Clone(c.MAC), at: g.now(), announced: c.Announced, bound: s.node.bound}
	if member || !g.wait(vip, s, f) {
		g.heard(vip, s, f, member)
	}
}

// heard acts on frame f on vip: another host holds the VIP. A backup whose
// master went silent waits while a router of our group does (its daemon
// restarting): whether a stranger's answer counts is the election's to
// say (vrrp's Machine.Served: only while it has heard no master at all).
// A router's announcement is contested; a stranger's frame is a claim
// (claimed). Under mu.
func (g *Guard) heard(vip netip.Addr, s *vipState, f frame, member bool) {
	g.note(Note{Kind: Served, Member: member, At: f.at})
	switch {
	case !member:
		g.claimed(vip, s, f.mac, f.at, f.bound && s.node.bound)
	case f.announced:
		g.contest(vip, s)
	}
}

// claimed counts a frame of mac claiming vip, seen at at: a conflict,
// defended against (bound: the VIP was bound here when the frame came,
// and still is) or reported as this node's part says. Under mu.
func (g *Guard) claimed(vip netip.Addr, s *vipState, mac net.HardwareAddr, at time.Time, bound bool) {
	now, o := at, &s.others
	if o.claim == nil || !slices.Equal(o.claim.MAC, mac) {
		o.replaced = o.claim
		o.claim = &Conflict{VIP: vip, MAC: slices.Clone(mac), Since: now}
		g.kick()
	} else if s.probes.sent.After(o.claim.Since) && !o.claim.defended() {
		g.report(s) // it answered a probe sent after its first answer
	}
	o.claim.Last = now
	want := s.node.want
	defend := want && bound && (o.defended.IsZero() || now.Sub(o.defended) >= DefendInterval)
	switch {
	case defend:
		o.defended, o.claim.defence = now, now
	case want:
		g.report(s)
	}
	s.probes.quiet = 0
	if defend {
		g.log.Warn("Another host answered for the VIP: defending it (RFC 5227), releasing it if it answers again", "address", vip,
			"mac", mac.String(), "within", DefendInterval)
		g.Defended.Add(1)
		g.note(Note{Kind: Defend, VIP: vip})
	}
	if want {
		g.note(Note{Kind: Changed})
	}
}

// defended says whether this node defended the VIP against c's answer
// and c has not answered since.
func (c *Conflict) defended() bool { return !c.defence.IsZero() && !c.Last.After(c.defence) }

// contest notes that a router of our group announced vip (Contested), if
// this node should hold it and was not told within ProbeEvery. Under mu.
func (g *Guard) contest(vip netip.Addr, s *vipState) {
	now := g.now()
	if s.node.want && now.Sub(s.others.contested) >= ProbeEvery {
		s.others.contested = now
		g.note(Note{Kind: Contested, VIP: vip})
	}
}

// report logs and counts s's claim, once; under mu.
func (g *Guard) report(s *vipState) {
	c := s.others.claim
	if c.reported {
		return
	}
	c.reported = true
	g.Detected.Add(1)
	action := "not binding it until it stops"
	if s.node.want {
		action = "releasing it until it stops"
	}
	g.log.Warn("Another host answers for the VIP", "address", c.VIP, "mac", c.MAC.String(), "action", action,
		"remedy", "find the host with this MAC (ip neigh, the switch's tables) and remove the address from it")
}

// settling says whether Start was called less than Settle ago (or not yet).
func (g *Guard) settling() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started.IsZero() || g.now().Sub(g.started) < g.Settle
}

// forgetMembers drops the conflicts of hosts since known to be ours: a
// member whose advertisement or neighbour entry came after its answer. A
// VIP this node should hold that this frees is decided again at once (a
// Changed note), not once the latest probe's answer wait is over
// (testdata/guard/member-learned-late.txt). A stranger's claim that the
// member's answer replaced comes back: the VIP stays the stranger's
// (testdata/guard/stranger-behind-member.txt).
func (g *Guard) forgetMembers() {
	g.mu.Lock()
	var macs []net.HardwareAddr
	for _, s := range g.vips {
		for _, c := range []*Conflict{s.others.claim, s.others.replaced} {
			if c != nil {
				macs = append(macs, c.MAC)
			}
		}
	}
	g.mu.Unlock()
	ours := map[string]bool{}
	for _, mac := range macs {
		if g.id.Ours(mac) {
			ours[string(mac)] = true
		}
	}
	if len(ours) == 0 {
		return
	}
	freed := false
	g.mu.Lock()
	for _, vip := range slices.SortedFunc(maps.Keys(g.vips), netip.Addr.Compare) { // logged in one order
		s := g.vips[vip]
		o := &s.others
		if o.replaced != nil && ours[string(o.replaced.MAC)] {
			o.replaced = nil
		}
		if o.claim == nil || !ours[string(o.claim.MAC)] {
			continue
		}
		if o.claim.reported {
			g.log.Info("The host that answered for the VIP is a router of our group", "address", vip, "mac", o.claim.MAC.String())
		}
		o.claim, o.replaced = o.replaced, nil
		freed = freed || s.node.want && o.claim == nil
	}
	g.mu.Unlock()
	if freed {
		g.note(Note{Kind: Changed})
	}
}

// Conflicts returns the outstanding conflicts that were reported.
func (g *Guard) Conflicts() []Conflict {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Conflict
	for _, s := range g.vips {
		if c := s.others.claim; c != nil && c.reported {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b Conflict) int { return a.VIP.Compare(b.VIP) })
	return out
}

// LinkChanged says the interface changed (carrier lost or back, made
// again): what the probes said before is void and every VIP is probed at
// once, as RFC 5227 section 2.1 asks of a host whose link changed; its wire
// gets a fresh start. A VIP not bound is bound again only after a probe on
// the link as it is now went unanswered: a host that took the VIP while
// our link was down answers it (testdata/guard/link-change.txt); the
// probe sent before the change is never counted
// (testdata/guard/link-change-voids-the-probe-before.txt).
func (g *Guard) LinkChanged() {
	g.mu.Lock()
	for _, s := range g.vips {
		s.probes.tried, s.probes.checked, s.wire.failing = time.Time{}, false, time.Time{}
		s.probes.void()
	}
	g.mu.Unlock()
	g.kick()
}

// ProbeNow probes every VIP at once (vrrp's Ask: a backup whose master
// went silent asks whether its host still answers for them; the answers
// reach Served). Besides the schedule: the probe is not the latest one of
// the verdict, so a takeover a moment later does not wait for its answer
// (AnswerWait) before binding, and it does not move the next
// (TestProbeNowDoesNotHoldATakeover).
func (g *Guard) ProbeNow() {
	g.mu.Lock()
	g.asked = true
	g.mu.Unlock()
	g.kick()
}

// askProbes sends ProbeNow's probes, if asked.
func (g *Guard) askProbes() {
	g.mu.Lock()
	var wires []Wire
	for _, s := range g.vips {
		if g.asked && s.wire.conn != nil {
			wires = append(wires, s.wire.conn)
		}
	}
	g.asked = false
	g.mu.Unlock()
	for _, w := range wires {
		if err := w.Probe(); err != nil {
			g.log.Debug("Probing for the VIP's holder failed", "error", err)
		}
	}
}

// Rejudge makes the guard judge its claims again soon: a hardware address
// became ours or a member was resolved (Known's Grew), so a claim may be a
// member's, and the frames waiting may be settled.
func (g *Guard) Rejudge() { g.kick() }

func (g *Guard) kick() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}
