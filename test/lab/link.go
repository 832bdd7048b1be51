package lab

import (
	"net/netip"
)

// AddBareHost creates a namespace with only lo up: connect it with Link.
func (l *Lab) AddBareHost(name string) (*Host, error) {
	h := &Host{Name: name, NS: l.Prefix + "-" + name, lab: l}
	if err := run("ip", "netns", "add", h.NS); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.hosts = append(l.hosts, h)
	l.mu.Unlock()
	if err := l.exec(h.NS, "ip", "link", "set", "lo", "up"); err != nil {
		return nil, err
	}
	return h, l.exec(h.NS, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
}

// Link joins two hosts with a veth pair, aIf in a and bIf in b, and puts the
// given addresses on each end.
func (l *Lab) Link(a *Host, aIf string, aAddrs []netip.Prefix, b *Host, bIf string, bAddrs []netip.Prefix) error {
	if err := l.exec(a.NS, "ip", "link", "add", aIf, "type", "veth", "peer", "name", bIf, "netns", b.NS); err != nil {
		return err
	}
	for _, end := range []struct {
		h     *Host
		ifc   string
		addrs []netip.Prefix
	}{{a, aIf, aAddrs}, {b, bIf, bAddrs}} {
		for _, p := range end.addrs {
			if err := l.exec(end.h.NS, "ip", "addr", "add", p.String(), "dev", end.ifc, "nodad"); err != nil {
				return err
			}
		}
		if err := l.exec(end.h.NS, "ip", "link", "set", end.ifc, "up"); err != nil {
			return err
		}
	}
	return nil
}

// Router turns forwarding on for IPv4 and IPv6 in the host, with ECMP
// hashing on layer 4 so connections from one client spread over next hops.
func (h *Host) Router() error {
	_, err := h.Exec("sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
		"net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1")
	return err
}

// DefaultRoute sets the host's default routes via the given gateways (either may be invalid).
func (h *Host) DefaultRoute(v4, v6 netip.Addr) error {
	for _, gw := range []netip.Addr{v4, v6} {
		if !gw.IsValid() {
			continue
		}
		family := "-4"
		if gw.Is6() {
			family = "-6"
		}
		if _, err := h.Exec("ip", family, "route", "replace", "default", "via", gw.String()); err != nil {
			return err
		}
	}
	return nil
}
