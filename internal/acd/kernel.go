package acd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// resubscribeEvery is the pause before subscribing to the kernel's tables
// again after the subscription failed (a receive buffer overrun, say).
const resubscribeEvery = time.Second

// WatchKernel feeds k the kernel's links (this host's hardware addresses)
// and neighbour entries until ctx ends: a dump of each at start, then
// their changes as they happen. A failed subscription is made again, with
// a fresh dump; what k knew stays meanwhile.
func WatchKernel(ctx context.Context, k *Known, log *slog.Logger) {
	for ctx.Err() == nil {
		err := watchKernel(ctx, k)
		if ctx.Err() != nil {
			return
		}
		log.Warn("Watching the kernel's link and neighbour tables failed: what the conflict check knows of this host and its group stays as it was", "error", err)
		sleep(ctx, resubscribeEvery)
	}
}

func watchKernel(ctx context.Context, k *Known) error {
	done := make(chan struct{})
	defer close(done)
	failed := make(chan error, 2)
	report := func(err error) {
		if !errors.Is(err, netlink.ErrDumpInterrupted) && !foreignSender(err) {
			select {
			case failed <- err:
			default:
			}
		}
	}
	links := make(chan netlink.LinkUpdate, 64)
	if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{ListExisting: true, ErrorCallback: report}); err != nil {
		return fmt.Errorf("subscribing to links: %w", err)
	}
	neighs := make(chan netlink.NeighUpdate, 256)
	if err := netlink.NeighSubscribeWithOptions(neighs, done, netlink.NeighSubscribeOptions{ListExisting: true, ErrorCallback: report}); err != nil {
		return fmt.Errorf("subscribing to neighbours: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case u, ok := <-links:
			if !ok {
				return errors.New("the link subscription ended")
			}
			if u.Header.Type == unix.RTM_DELLINK {
				k.DelLink(int(u.Index))
			} else {
				k.SetLink(int(u.Index), u.Attrs().HardwareAddr)
			}
		case u, ok := <-neighs:
			if !ok {
				return errors.New("the neighbour subscription ended")
			}
			neighNews(k, u)
		}
	}
}

// neighNews hands k the kernel's news of a neighbour entry: deleted or
// failed to resolve, the entry is gone; being resolved (no hardware
// address yet), the entry goes but a member's wait for its resolution
// goes on; else its hardware address now.
func neighNews(k *Known, u netlink.NeighUpdate) {
	ip, ok := netip.AddrFromSlice(u.IP)
	switch {
	case !ok:
	case u.Type == unix.RTM_DELNEIGH || u.State&unix.NUD_FAILED != 0:
		k.NeighGone(ip)
	case u.State&unix.NUD_INCOMPLETE != 0:
		k.NeighIncomplete(ip)
	case u.Type == unix.RTM_NEWNEIGH:
		k.Neigh(ip, u.HardwareAddr)
	}
}

// foreignSender says whether a subscription's error is a message from a
// user-space sender, which the library skips: nothing of the kernel's is
// lost. Another program's subscription with a dump (ListExisting: the
// library sends its dump request from the socket bound to the multicast
// group, vishvananda/netlink#786) reaches every socket of that group in
// the network namespace; ended on it, the subscriptions of two such
// programs — two daemons of ours in one namespace, or a CNI agent beside
// us — ended each other's every second. The library has no sentinel for it.
func foreignSender(err error) bool {
	return strings.HasPrefix(err.Error(), "Wrong sender portid")
}

// Resolve asks the kernel to resolve ip (NTF_USE: as if it had a packet for
// it); the answer reaches the neighbour table, and WatchKernel's Known, as
// an event. It deletes nothing, and leaves a permanent entry as it is.
func Resolve(ifname string, ip netip.Addr) {
	link, err := netlink.LinkByName(ifname)
	if err != nil {
		return
	}
	fam := netlink.FAMILY_V4
	if ip.Is6() {
		fam = netlink.FAMILY_V6
	}
	_ = netlink.NeighSet(&netlink.Neigh{LinkIndex: link.Attrs().Index, Family: fam, IP: ip.WithZone("").AsSlice(), Flags: netlink.NTF_USE})
}
