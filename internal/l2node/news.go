package l2node

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/l2"
	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// News is what the node hears beside the election: a vrrp.Event of kind
// Beside carries one.
type News struct {
	Kind    NewsKind
	Netlink reconcile.Event // Kernel
}

// NewsKind says what a News tells.
type NewsKind uint8

const (
	// Woken: the conflict check asks for a round (acd.Guard.Woken).
	Woken NewsKind = iota + 1
	// Noted: the conflict check has notes (acd.Guard.Noted).
	Noted
	// Grew: a hardware address became ours, or a member was resolved
	// (acd.Known.Grew): the claims are judged again.
	Grew
	// LinkChanged: netlink's news of the interface itself (deleted,
	// created, up, down): the election looks at it now, the conflict
	// check's probes before it are void.
	LinkChanged
	// Kernel: netlink's news of the interface's addresses or link state
	// (Netlink) for the reconcile loop.
	Kernel
)

var newsNames = [...]string{Woken: "woken", Noted: "noted", Grew: "grew", LinkChanged: "link changed", Kernel: "kernel"}

// String names the kind.
func (k NewsKind) String() string {
	if int(k) < len(newsNames) && newsNames[k] != "" {
		return newsNames[k]
	}
	return fmt.Sprintf("NewsKind(%d)", k)
}

// Event is n as the event that carries it to the node.
func (n News) Event() vrrp.Event { return vrrp.Event{Kind: vrrp.Beside, Beside: n} }

// beside takes news beside the election. An unknown kind is a bug in its
// driver: it panics.
func (n *Node) beside(news News) {
	switch news.Kind {
	case Woken:
		n.due.round = n.guard != nil
	case Noted:
		// flush takes the notes (listen)
	case Grew:
		if n.guard != nil {
			n.guard.Rejudge()
		}
	case LinkChanged:
		if n.guard != nil {
			n.guard.LinkChanged()
		}
		if n.started { // else it looks at the link as it starts
			n.step(vrrp.Event{Kind: vrrp.LinkNews})
		}
	case Kernel:
		n.loop.Told(news.Netlink)
		n.due.pass = true
	default:
		panic(fmt.Sprintf("l2node: unknown news kind %v", news.Kind))
	}
}

// listen takes what the conflict check has for the node without waiting:
// a member resolved (Rejudge), a round asked for, and its notes, each to
// its owner (Relay). Its driver's news say the same when they come from
// another goroutine; here the node hears what its own calls caused.
func (n *Node) listen() {
	if n.guard == nil || !n.started { // it starts with the election (start)
		return
	}
	select {
	case <-n.known.Grew():
		n.guard.Rejudge()
	default:
	}
	select {
	case <-n.guard.Woken():
		n.due.round = true
	default:
	}
	select {
	case <-n.guard.Noted():
	default:
	}
	Relay(n.guard.Notes(), owners{n})
}

// owners are the node's parts the conflict check's notes go to.
type owners struct{ n *Node }

func (o owners) Poke() { o.n.due.pass = true }

// Contested: another router of our group announced vip; the neighbours
// that heard it now send to that router. When the election, caught up
// with what the kernel queued, still has this node as the master holding
// vip, it announces vip again.
func (o owners) Contested(vip netip.Addr) {
	if o.n.again(vip, l2.Again{Contest: true}) {
		o.n.log.Info("Another router of our group announced the VIP: announcing it again", "address", vip)
	}
}

// Defend: this node defends vip against another host's answer (RFC 5227):
// it announces vip again, as Contested does, however long it has been
// the master.
func (o owners) Defend(vip netip.Addr) {
	if o.n.again(vip, l2.Again{}) {
		o.n.log.Info("Defending the VIP: announcing it again", "address", vip)
	}
}

func (o owners) Served(member bool, at time.Time) {
	o.n.report(o.n.elect.Served(member, at, o.n.now))
}

// again announces vip again once the election has read what the kernel
// queued, if it goes then (l2.Again.Goes), and says whether it does.
func (n *Node) again(vip netip.Addr, req l2.Again) bool {
	n.step(vrrp.Event{Kind: vrrp.QueueRead})
	if !req.Goes(n.loop.Wanted(vip), n.inst.Leading(), n.inst.Established(n.now())) {
		return false
	}
	if n.loop.Again(vip) {
		n.due.pass = true
	}
	return true
}
