package l2node

import (
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/l2"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// announcing is one VIP's announcements: its burst (l2.Burst), when the
// next try is due, whether our own address is still to go first (a
// takeover's), and how many tries the announcement due has failed.
type announcing struct {
	b     *l2.Burst
	due   time.Time
	self  bool
	tries int
}

// burstHooks are the node's announcements as the reconcile loop's hooks
// start and stop them (l2.Hooks).
type burstHooks struct{ n *Node }

// Start begins a new burst of vip, due at once, in place of one running.
func (h burstHooks) Start(vip netip.Addr) {
	now := h.n.now()
	h.n.bursts[vip] = &announcing{b: l2.NewBurst(now), due: now, self: true}
}

func (h burstHooks) Stop(vip netip.Addr) { delete(h.n.bursts, vip) }

// announceDue makes the announcement of the VIP due first at now (in VIP
// order among those due at the same time), if any, and says whether there
// was one.
func (n *Node) announceDue(now time.Time) bool {
	var first netip.Addr
	for vip, a := range n.bursts {
		if !a.due.After(now) && (!first.IsValid() || a.due.Before(n.bursts[first].due) ||
			a.due.Equal(n.bursts[first].due) && vip.Less(first)) {
			first = vip
		}
	}
	if !first.IsValid() {
		return false
	}
	n.announceOne(first, n.bursts[first])
	return true
}

// announceOne makes vip's announcement due, each try of it asking the
// gates (l2.Burst.Go; a repeat found late has the election read what the
// kernel queued first): a burst that does not go is over. A takeover's
// first announcement sends our own address of the VIP's family first,
// then the VIP. A failed send is tried again RetryGap later, SendTries
// times in all, before it counts as sent-and-failed and the next goes.
func (n *Node) announceOne(vip netip.Addr, a *announcing) {
	gates := func() l2.Gates {
		return a.b.Ask(func() bool { return n.loop.Wanted(vip) }, n.inst.Leading, func() bool { return n.rec.Fresh(vip) })
	}
	caughtUp := func(time.Time) bool { n.step(vrrp.Event{Kind: vrrp.QueueRead}); return true }
	if !a.b.Go(n.now, gates, caughtUp) {
		delete(n.bursts, vip)
		return
	}
	if self := n.inst.Primary(vip); a.self && self.IsValid() {
		if !n.try(self, a) {
			return
		}
	}
	a.self = false
	if !n.try(vip, a) {
		return
	}
	if a.due = a.b.Sent(n.now(), int(n.repeat.Load()), l2.RepeatGap, time.Duration(n.refresh.Load())); a.due.IsZero() {
		delete(n.bursts, vip)
	}
}

// try sends one announcement of addr and says whether it is over: sent,
// or failed its last try (counted, logged); false while a retry waits
// (a.due).
func (n *Node) try(addr netip.Addr, a *announcing) bool {
	now := n.now()
	err := n.announce(addr)
	switch {
	case err == nil:
		n.Sent.Add(1)
		n.log.Debug("Announced VIP", "address", addr, "interface", n.iface)
	case a.tries+1 < l2.SendTries:
		a.tries++
		a.due = now.Add(l2.RetryGap)
		return false
	default:
		n.SendFailed.Add(1)
		n.log.Warn("Announcing VIP failed", "address", addr, "interface", n.iface, "error", err)
	}
	a.tries = 0
	return true
}
