package ifaddr

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// labelSuffix marks our IPv4 addresses in `ip addr` (eth0:cpvip).
const labelSuffix = ":cpvip"

// Link is the addresses of the interface called Name. It looks the interface
// up by name on every call, so it follows an interface that is deleted and
// created again, over one netlink socket kept open (a socket per call would
// cost more than the calls). Use it from one goroutine.
type Link struct {
	Name string
	h    *netlink.Handle
}

// NewLink opens the netlink socket for the interface called name.
func NewLink(name string) (*Link, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("opening netlink: %w", err)
	}
	return &Link{Name: name, h: h}, nil
}

// List returns every address on the interface.
func (l *Link) List() ([]netip.Prefix, error) {
	link, err := l.h.LinkByName(l.Name)
	if err != nil {
		return nil, fmt.Errorf("finding interface %s: %w", l.Name, err)
	}
	// A dump an address change on the host interrupted is read again: the
	// kernel's dump is of every interface's addresses, so any change on
	// the host (a CNI's, our own) can break it.
	addrs, err := l.h.AddrList(link, netlink.FAMILY_ALL)
	for try := 0; errors.Is(err, netlink.ErrDumpInterrupted) && try < 3; try++ {
		addrs, err = l.h.AddrList(link, netlink.FAMILY_ALL)
	}
	if err != nil {
		return nil, fmt.Errorf("listing addresses of %s: %w", l.Name, err)
	}
	out := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		if p, ok := Prefix(a.IPNet); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// Add binds p idempotently: IPv4 with our label, IPv6 with IFA_F_NODAD so it
// is usable at once instead of tentative. A lifetime (whole seconds, at
// least one) is its valid and preferred lifetime, set anew by each Add: the
// kernel removes the address once it has passed (`ip addr` shows it
// "dynamic"); 0 binds it for good.
func (l *Link) Add(p netip.Prefix, lifetime time.Duration) error {
	link, err := l.h.LinkByName(l.Name)
	if err != nil {
		return fmt.Errorf("finding interface %s: %w", l.Name, err)
	}
	a := &netlink.Addr{IPNet: toIPNet(p)}
	if p.Addr().Is4() {
		a.Label = Label(l.Name)
	} else {
		a.Flags = unix.IFA_F_NODAD
	}
	if lifetime > 0 {
		a.ValidLft = max(1, int(lifetime/time.Second))
		a.PreferedLft = a.ValidLft
	}
	if err := l.h.AddrReplace(link, a); err != nil {
		return fmt.Errorf("adding %s to %s: %w", p, l.Name, err)
	}
	return nil
}

// Del removes p; an address that is already gone is no error.
func (l *Link) Del(p netip.Prefix) error {
	link, err := l.h.LinkByName(l.Name)
	if err != nil {
		return fmt.Errorf("finding interface %s: %w", l.Name, err)
	}
	if err := l.h.AddrDel(link, &netlink.Addr{IPNet: toIPNet(p)}); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
		return fmt.Errorf("removing %s from %s: %w", p, l.Name, err)
	}
	return nil
}

// Label returns the IPv4 address label for an interface, or "" when the
// name leaves no room (labels are at most 15 bytes and start with the name).
func Label(ifname string) string {
	if len(ifname)+len(labelSuffix) > unix.IFNAMSIZ-1 {
		return ""
	}
	return ifname + labelSuffix
}

func toIPNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), bits)}
}

// Prefix converts a netlink address to a netip.Prefix (IPv4 unmapped).
func Prefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ip.Unmap(), ones), true
}
