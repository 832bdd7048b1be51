package ifaddr

import (
	"context"
	"log/slog"
	"net"
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
// blocking), LinkUp and LinkDown when its state flips. It follows the
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
	for {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-addrs:
			if !ok {
				return nil
			}
			if u.LinkIndex == w.index {
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
