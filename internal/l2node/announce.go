package l2node

import (
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/l2"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// announcing is one VIP's announcements: its burst (l2.Burst), when the
// next try is due, and how many tries the announcement due has failed.
type announcing struct {
	b     *l2.Burst
	due   time.Time
	tries int
}

// bursts are the node's announcements as the reconcile loop's hooks start
// and stop them (l2.Hooks).
type bursts struct{ n *Node }

// Start begins a new burst of vip, due at once, in place of one running.
func (b bursts) Start(vip netip.Addr) {
	now := b.n.now()
	b.n.bursts[vip] = &announcing{b: l2.NewBurst(now), due: now}
}

func (b bursts) Stop(vip netip.Addr) { delete(b.n.bursts, vip) }

// announceDue makes the announcement of the VIP due first at now (in VIP
// order at the same time), if any, and says whether there was one.
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
// kernel queued first): a burst that does not go is over. A failed send is
// tried again RetryGap later, SendTries times in all, before it counts as
// sent-and-failed; a takeover's first try announces our own address first.
func (n *Node) announceOne(vip netip.Addr, a *announcing) {
	gates := func() l2.Gates {
		return a.b.Ask(func() bool { return n.loop.Wanted(vip) }, n.inst.Leading, func() bool { return n.rec.Fresh(vip) })
	}
	caughtUp := func(time.Time) bool { n.step(vrrp.Event{Kind: vrrp.QueueRead}); return true }
	if !a.b.Go(n.now, gates, caughtUp) {
		n.stopBurst(vip, a)
		return
	}
	if a.tries == 0 {
		if a.b.Self() {
			if self := n.inst.Primary(vip); self.IsValid() {
				if err := n.announce(self); err != nil {
					n.log.Debug("Announcing our own address failed", "address", self, "error", err)
				}
			}
		}
	}
	now := n.now()
	if err := n.announce(vip); err != nil {
		if a.tries++; a.tries < l2.SendTries {
			a.due = now.Add(l2.RetryGap)
			return
		}
		n.SendFailed.Add(1)
		n.log.Warn("Announcing VIP failed", "address", vip, "interface", n.iface, "error", err)
	} else {
		n.Sent.Add(1)
		n.log.Debug("Announced VIP", "address", vip, "interface", n.iface)
	}
	a.tries = 0
	if a.due = a.b.Sent(now, int(n.repeat.Load()), l2.RepeatGap, time.Duration(n.refresh.Load())); a.due.IsZero() {
		n.stopBurst(vip, a)
	}
}

// stopBurst ends vip's burst a, unless the election's catching up started
// another meanwhile.
func (n *Node) stopBurst(vip netip.Addr, a *announcing) {
	if n.bursts[vip] == a {
		delete(n.bursts, vip)
	}
}
