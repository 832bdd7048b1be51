package ifaddr

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// resubscribeDelay is the pause before subscribing again after netlink closed
// a subscription (it does so on any receive error).
const resubscribeDelay = 100 * time.Millisecond

// Watch sends events about the interface called name to out until ctx ends:
// AddrChanged for any address added to or removed from it (coalesced, never
// blocking; not for an address set again, as a lifetime's renewal is), LinkUp and LinkDown when its state flips. It follows the
// interface by name across deletion and re-creation. onLink, if not nil, is
// called on every change of the link itself (created, deleted, up, down,
// renamed), before the event is sent: the VRRP election follows the link
// at once.
func Watch(ctx context.Context, name string, out chan<- reconcile.Event, onLink func(), log *slog.Logger) {
	w := &watcher{name: name, out: out, onLink: onLink, index: -1}
	if link, err := netlink.LinkByName(name); err == nil {
		w.index, w.up = link.Attrs().Index, isUp(link)
	}
	for ctx.Err() == nil {
		if err := w.subscribe(ctx); err != nil {
			log.Warn("Netlink subscription failed, retrying", "interface", name, "error", err)
		}
		w.notify(ctx, reconcile.AddrChanged) // events may have been missed
		select {
		case <-ctx.Done():
		case <-time.After(resubscribeDelay):
		}
	}
}

type watcher struct {
	name   string
	out    chan<- reconcile.Event
	onLink func()
	index  int
	up     bool
	// present: the addresses on the interface, as the updates since the
	// subscription's dump tell.
	present map[netip.Prefix]bool
}

// subscribe runs one address and link subscription until either closes.
func (w *watcher) subscribe(ctx context.Context) error {
	done := make(chan struct{})
	defer close(done)
	addrs := make(chan netlink.AddrUpdate, 64)
	links := make(chan netlink.LinkUpdate, 64)
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{}); err != nil {
		return err
	}
	if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{}); err != nil {
		return err
	}
	w.dump()
	for {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-addrs:
			if !ok {
				return nil
			}
			if u.LinkIndex == w.index && w.changes(u) {
				w.notify(ctx, reconcile.AddrChanged)
			}
		case u, ok := <-links:
			if !ok {
				return nil
			}
			w.link(ctx, u)
		}
	}
}

func (w *watcher) link(ctx context.Context, u netlink.LinkUpdate) {
	attrs := u.Attrs()
	if attrs.Name != w.name && attrs.Index != w.index {
		return
	}
	if w.onLink != nil {
		w.onLink()
	}
	up := u.Header.Type != unix.RTM_DELLINK && attrs.Name == w.name && isUp(u.Link)
	if w.index != attrs.Index || u.Header.Type == unix.RTM_DELLINK {
		w.present = nil // another interface: its addresses are news
	}
	w.index = attrs.Index
	if u.Header.Type == unix.RTM_DELLINK {
		w.index = -1
	}
	switch {
	case up && !w.up:
		w.notify(ctx, reconcile.LinkUp)
	case !up && w.up:
		w.notify(ctx, reconcile.LinkDown)
	default:
		w.notify(ctx, reconcile.AddrChanged)
	}
	w.up = up
}

// dump reads the interface's addresses after subscribing: an update that
// sets one of them again is then no news.
func (w *watcher) dump() {
	w.present = nil
	link, err := netlink.LinkByIndex(w.index)
	if err != nil {
		return
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return
	}
	w.present = map[netip.Prefix]bool{}
	for _, a := range addrs {
		if p, ok := Prefix(a.IPNet); ok {
			w.present[p] = true
		}
	}
}

// changes says whether u adds or removes an address of the interface
// (an address set again, as a renewal of its lifetime is, changes nothing);
// with the addresses not known, every update does.
func (w *watcher) changes(u netlink.AddrUpdate) bool {
	p, ok := Prefix(&u.LinkAddress)
	if !ok || w.present == nil {
		return true
	}
	if u.NewAddr && w.present[p] {
		return false // set again: a renewal
	}
	if u.NewAddr {
		w.present[p] = true
	} else {
		delete(w.present, p)
	}
	return true
}

// notify sends an event; AddrChanged is dropped when one is already queued.
func (w *watcher) notify(ctx context.Context, ev reconcile.Event) {
	if ev == reconcile.AddrChanged {
		select {
		case w.out <- ev:
		default:
		}
		return
	}
	select {
	case w.out <- ev:
	case <-ctx.Done():
	}
}

// isUp reports whether the link is administratively up and has carrier.
func isUp(l netlink.Link) bool {
	a := l.Attrs()
	return a.Flags&net.FlagUp != 0 && (a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown)
}
