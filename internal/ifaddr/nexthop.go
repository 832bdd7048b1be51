package ifaddr

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ErrNoIPv6 says the interface toward a peer has no usable global IPv6
// address (none yet, or only tentative ones).
var ErrNoIPv6 = errors.New("no global IPv6 address")

// IPv6Toward returns the first global IPv6 address, other than skip, of the
// interface the kernel routes peer through, and that interface's name. It is
// the next hop for IPv6 routes sent over an IPv4 session with peer. Tentative,
// DAD-failed and deprecated addresses are not used.
func IPv6Toward(peer netip.Addr, skip []netip.Prefix) (netip.Addr, string, error) {
	routes, err := netlink.RouteGet(peer.AsSlice())
	if err != nil || len(routes) == 0 {
		return netip.Addr{}, "", fmt.Errorf("no route to %s: %v", peer, err)
	}
	link, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return netip.Addr{}, "", fmt.Errorf("interface toward %s: %w", peer, err)
	}
	name := link.Attrs().Name
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V6)
	if err != nil {
		return netip.Addr{}, name, fmt.Errorf("listing addresses of %s: %w", name, err)
	}
	const unusable = unix.IFA_F_TENTATIVE | unix.IFA_F_DADFAILED | unix.IFA_F_DEPRECATED
	for _, a := range addrs {
		p, ok := Prefix(a.IPNet)
		if !ok || !p.Addr().IsGlobalUnicast() || a.Flags&unusable != 0 ||
			slices.ContainsFunc(skip, func(s netip.Prefix) bool { return s.Addr() == p.Addr() }) {
			continue
		}
		return p.Addr(), name, nil
	}
	return netip.Addr{}, name, fmt.Errorf("%s toward %s: %w", name, peer, ErrNoIPv6)
}
