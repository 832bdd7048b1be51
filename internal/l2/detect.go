package l2

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/novaedge/cpvip/internal/ifaddr"
	"github.com/vishvananda/netlink"
)

// DetectInterface picks the interface for the VIPs: the up, non-loopback
// interface with an address whose subnet holds the VIP, else the one holding
// the default route of the VIP's family. All VIPs must agree.
func DetectInterface(vips []netip.Prefix) (string, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return "", fmt.Errorf("listing interfaces: %w", err)
	}
	chosen := ""
	for _, vip := range vips {
		name, err := detectOne(links, vip.Addr())
		if err != nil {
			return "", err
		}
		if chosen != "" && name != chosen {
			return "", fmt.Errorf("the VIPs belong on different interfaces (%s, %s): set NOVAEDGE_CP_VIP_INTERFACE", chosen, name)
		}
		chosen = name
	}
	return chosen, nil
}

func detectOne(links []netlink.Link, vip netip.Addr) (string, error) {
	family := netlink.FAMILY_V4
	if vip.Is6() {
		family = netlink.FAMILY_V6
	}
	for _, l := range links {
		a := l.Attrs()
		if a.Flags&net.FlagUp == 0 || a.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := netlink.AddrList(l, family)
		if err != nil {
			continue
		}
		for _, addr := range addrs {
			p, ok := ifaddr.Prefix(addr.IPNet)
			if ok && p.Addr() != vip && p.Bits() < p.Addr().BitLen() && p.Masked().Contains(vip) {
				return a.Name, nil
			}
		}
	}
	routes, err := netlink.RouteList(nil, family)
	if err != nil {
		return "", fmt.Errorf("listing routes: %w", err)
	}
	for _, r := range routes {
		if isDefault(r) && r.LinkIndex > 0 {
			for _, l := range links {
				if l.Attrs().Index == r.LinkIndex {
					return l.Attrs().Name, nil
				}
			}
		}
	}
	return "", errors.New("no up interface has an address in the subnet of " + vip.String() +
		" and there is no default route: set NOVAEDGE_CP_VIP_INTERFACE")
}

func isDefault(r netlink.Route) bool {
	if r.Dst == nil {
		return true
	}
	ones, _ := r.Dst.Mask.Size()
	return ones == 0
}
