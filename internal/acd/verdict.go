package acd

import (
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/bind"
)

// Verdict returns the check's verdict on vip as the latest Tell judged it
// (bind.Decide makes the decision from it); it only reads:
//   - Claimed: another host answers for it (after one did, FreeAfter probes
//     in a row must go unanswered before it is free);
//   - Defended: this node holds it and defended it against another host's
//     first answer, which has not answered again;
//   - Clear: no other host answers and the latest probe went unanswered —
//     at a takeover, the one of the last second; or the VIP is not checked
//     (unknown to the guard, or its wire has failed for UncheckedAfter: a
//     claim it can no longer confirm is dropped, as a fault in the check
//     must not keep the VIP down);
//   - Unprobed: no answer known, but no probe has gone unanswered since
//     the check started or the link last changed; or frames wait for a
//     member's resolution and the VIP is not bound; or no Tell judged it
//     yet.
func (g *Guard) Verdict(vip netip.Addr) bind.Check {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.vips[vip]
	if !ok {
		return bind.Clear
	}
	return s.verdict
}

// Tell records whether this node should hold vip (want) and whether the
// kernel has it bound here (bound), and judges the VIP again (judge);
// Verdict reads the judgement.
func (g *Guard) Tell(vip netip.Addr, want, bound bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.vips[vip]
	if !ok {
		return
	}
	if s.node.want != want {
		g.kick()
	}
	s.node = told{want: want, bound: bound}
	s.verdict = g.judge(vip, s)
}

// judge returns the verdict on vip from what the guard knows of it now. It
// settles a wait past its deadline (not left to the next round), counts
// the latest probe whose answer wait is over, frees a claim once
// FreeAfter probes in a row went unanswered, drops the claims and the
// frames held back of a VIP that is not checked, and reports a claim that
// keeps the VIP from this node; under mu.
func (g *Guard) judge(vip netip.Addr, s *vipState) bind.Check {
	o := &s.others
	if h := o.held; h != nil && !s.wire.unchecked && !g.now().Before(h.until) {
		g.settle(vip, s)
	}
	s.probes.count(g.now(), o)
	switch {
	case s.wire.unchecked:
		if o.claim != nil {
			g.log.Warn("Cannot probe for address conflicts: forgetting the host that answered for the VIP", "address", vip, "mac", o.claim.MAC.String())
			o.claim = nil
		}
		o.replaced, o.held = nil, nil
	case o.claim != nil && !g.free(vip, s):
		if o.claim.defended() {
			return bind.Defended
		}
		if s.node.want {
			g.report(s)
		}
		return bind.Claimed
	case o.held != nil && !s.node.bound:
		return bind.Unprobed // frames wait for a member's resolution: not bound meanwhile (Guard.wait)
	case !s.probes.checked:
		return bind.Unprobed
	}
	return bind.Clear
}

// free clears a conflict once FreeAfter probes in a row went unanswered.
func (g *Guard) free(vip netip.Addr, s *vipState) bool {
	if s.probes.quiet < FreeAfter {
		return false
	}
	o := &s.others
	if o.claim.reported {
		g.log.Info("No other host answers for the VIP any more", "address", vip, "mac", o.claim.MAC.String(),
			"conflict_for", g.now().Sub(o.claim.Since).Round(time.Millisecond))
	}
	o.claim, o.replaced = nil, nil
	return true
}
