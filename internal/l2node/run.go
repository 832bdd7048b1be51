package l2node

import (
	"context"
	"net/netip"

	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// Run drives the node with the wall clock until ctx ends (the agent's
// Elector): the election's instance runs the one loop
// (vrrp.Instance.Run), fed what the other goroutines tell the node
// (feed). decide sees each decision of the election (the agent's
// journal); the node carries them out itself. On return the node has
// resigned and released every VIP.
func (n *Node) Run(ctx context.Context, decide func(netip.Prefix, bool)) {
	n.decided = decide
	feedCtx, stop := context.WithCancel(context.Background())
	defer stop() // after Run: the news must not stop before the loop
	n.inst.Run(ctx, n, n.feed(feedCtx))
}

// Health hands the election the health checker's transition (the agent's
// Elector).
func (n *Node) Health(tr health.Transition) { n.inst.Health(tr) }

// feed forwards, in one goroutine until ctx ends, what the node's other
// goroutines tell it: the conflict check's wake-ups and notes, the
// identity's growth (its readers and the kernel's neighbour news), and
// netlink's news of the interface.
func (n *Node) feed(ctx context.Context) <-chan vrrp.Event {
	out := make(chan vrrp.Event)
	var woken, noted, grew <-chan struct{}
	if n.guard != nil {
		woken, noted, grew = n.guard.Woken(), n.guard.Noted(), n.known.Grew()
	}
	kernel, link := n.kernel, n.link
	go func() {
		for {
			var news News
			select {
			case <-ctx.Done():
				return
			case <-woken:
				news.Kind = Woken
			case <-noted:
				news.Kind = Noted
			case <-grew:
				news.Kind = Grew
			case <-link:
				news.Kind = LinkChanged
			case ev, ok := <-kernel:
				if !ok {
					kernel = nil
					continue
				}
				news = News{Kind: Kernel, Netlink: ev}
				// netlink tells of the link itself before its news for
				// the addresses: the election and the conflict check look
				// at an interface made again before a pass binds on it.
				select {
				case <-link:
					if !send(ctx, out, News{Kind: LinkChanged}) {
						return
					}
				default:
				}
			}
			if !send(ctx, out, news) {
				return
			}
		}
	}()
	return out
}

// send hands news to the node; false once ctx ended.
func send(ctx context.Context, out chan<- vrrp.Event, news News) bool {
	select {
	case out <- news.Event():
		return true
	case <-ctx.Done():
		return false
	}
}
