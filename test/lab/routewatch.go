package lab

import (
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// RouteWatch records, from netlink events, when the host's kernel route to a
// prefix changed: event-driven, so the times are exact.
type RouteWatch struct {
	prefix netip.Prefix
	done   chan struct{}
	mu     sync.Mutex
	events []time.Time
}

// WatchRoute subscribes to the host's route changes for p until Stop.
func (h *Host) WatchRoute(p netip.Prefix) (*RouteWatch, error) {
	ns, err := netns.GetFromName(h.NS)
	if err != nil {
		return nil, err
	}
	w := &RouteWatch{prefix: p, done: make(chan struct{})}
	ch := make(chan netlink.RouteUpdate, 64)
	if err := netlink.RouteSubscribeWithOptions(ch, w.done, netlink.RouteSubscribeOptions{Namespace: &ns}); err != nil {
		ns.Close()
		return nil, err
	}
	go func() {
		defer ns.Close()
		for u := range ch {
			if u.Dst == nil {
				continue
			}
			ones, _ := u.Dst.Mask.Size()
			ip, ok := netip.AddrFromSlice(u.Dst.IP)
			if ok && netip.PrefixFrom(ip.Unmap(), ones) == p {
				w.mu.Lock()
				w.events = append(w.events, time.Now())
				w.mu.Unlock()
			}
		}
	}()
	return w, nil
}

// FirstAfter returns the first change at or after t.
func (w *RouteWatch) FirstAfter(t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		if !e.Before(t) {
			return e, true
		}
	}
	return time.Time{}, false
}

// Stop ends the subscription.
func (w *RouteWatch) Stop() { close(w.done) }
