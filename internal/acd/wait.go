package acd

import (
	"net"
	"net/netip"
	"slices"
	"time"
)

// maxHeld bounds the frames held back for one VIP (a flood of forged
// frames): past it, the wait ends and they count at once, in order.
const maxHeld = 64

// holding is a VIP's wait while a member heard a moment ago is resolved
// (Guard.wait): the frames of hosts not known as ours, in the order they
// came.
type holding struct {
	until  time.Time // the wait's end, as it was at the first frame: later ones do not extend it
	frames []frame
}

// frame is another host's frame on a VIP as it came.
type frame struct {
	mac       net.HardwareAddr
	at        time.Time
	announced bool // it told the segment (a gratuitous ARP, an unsolicited NA)
	bound     bool // the VIP was bound here when it came
}

// since says whether a frame held back came at or after t: an answer to
// a probe sent then, not yet counted. False for no wait.
func (h *holding) since(t time.Time) bool {
	if h == nil {
		return false
	}
	for _, f := range h.frames {
		if !f.at.Before(t) {
			return true
		}
	}
	return false
}

// answerHeld says whether the latest probe's answer may be held back: it
// is counted, and the next probe sent, once the wait is settled.
func (s *vipState) answerHeld() bool {
	p := &s.probes
	return !p.sent.IsZero() && !p.counted.Equal(p.sent) && s.others.held.since(p.sent)
}

// wait holds back f, a frame of a host not known as ours, on vip while
// the identity resolves the members heard a moment ago
// (Identity.Resolving): it may be one of theirs, a new master announcing
// the VIP right after its first advertisement. While a VIP's wait lasts,
// every such frame on it waits too, so that they all count in the order
// they came, each as of its time: at the first frame's deadline or once
// nothing is left to resolve (settleWaiting; judge, when the deadline
// passed before the round). Past maxHeld frames the wait ends, the frames
// count, and f after them. False: f counts now (no member to resolve).
// Under mu.
func (g *Guard) wait(vip netip.Addr, s *vipState, f frame) bool {
	h := s.others.held
	switch {
	case h == nil:
		until := g.id.Resolving()
		if !until.After(f.at) {
			return false
		}
		s.others.held = &holding{until: until, frames: []frame{f}}
		g.kick() // a round sets the deadline
	case len(h.frames) >= maxHeld:
		g.settle(vip, s)
		return false
	default:
		h.frames = append(h.frames, f)
	}
	return true
}

// settleWaiting ends each VIP's wait that is over, or every wait once
// nothing is left to resolve (Identity.Resolving), in the order of the
// VIPs.
func (g *Guard) settleWaiting() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	resolved := !g.id.Resolving().After(now) // no frame held back is a member's still unknown
	var vips []netip.Addr
	for vip, s := range g.vips {
		if h := s.others.held; h != nil && (resolved || !now.Before(h.until)) {
			vips = append(vips, vip)
		}
	}
	slices.SortFunc(vips, netip.Addr.Compare)
	for _, vip := range vips {
		g.settle(vip, g.vips[vip])
	}
}

// settle ends vip's wait: each frame held back, in order, as of its time,
// is a member's (an announcement is contested) or a claim. A VIP this
// node should hold and was denied is judged again at once if no claim
// came of the wait (a claim notes its own change). Under mu.
func (g *Guard) settle(vip netip.Addr, s *vipState) {
	h := s.others.held
	s.others.held = nil
	stranger := false
	for _, f := range h.frames {
		member := g.id.Ours(f.mac)
		stranger = stranger || !member
		g.heard(vip, s, f, member)
	}
	if !stranger && s.denied() {
		g.note(Note{Kind: Changed})
	}
}
