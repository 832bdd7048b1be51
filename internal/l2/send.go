package l2

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
)

// Send sends one announcement of vip on the interface called ifname: a
// gratuitous ARP request and reply for IPv4, an unsolicited NA for IPv6. The
// VIP must already be bound (ARP needs an IPv4 address on the interface).
// Sockets are opened per announcement: announcements are rare, and an open
// raw socket would queue every ARP/ICMPv6 packet of the link meanwhile.
func Send(ifname string, vip netip.Addr) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("finding interface %s: %w", ifname, err)
	}
	if vip.Is4() {
		return gratuitousARP(ifi, vip)
	}
	return unsolicitedNA(ifi, vip)
}

func gratuitousARP(ifi *net.Interface, vip netip.Addr) error {
	c, err := arp.Dial(ifi)
	if err != nil {
		return fmt.Errorf("opening ARP socket on %s: %w", ifi.Name, err)
	}
	defer c.Close()
	for _, op := range []arp.Operation{arp.OperationRequest, arp.OperationReply} {
		p, err := arp.NewPacket(op, ifi.HardwareAddr, vip, ethernet.Broadcast, vip)
		if err != nil {
			return fmt.Errorf("building gratuitous ARP for %s: %w", vip, err)
		}
		if err := c.WriteTo(p, ethernet.Broadcast); err != nil {
			return fmt.Errorf("sending gratuitous ARP for %s on %s: %w", vip, ifi.Name, err)
		}
	}
	return nil
}

// unsolicitedNA sends from the link-local address as routers expect, or from
// the VIP itself (valid per RFC 4861 and never tentative: bound with NODAD)
// while the link-local address is still in duplicate address detection.
func unsolicitedNA(ifi *net.Interface, vip netip.Addr) error {
	c, _, err := ndp.Listen(ifi, ndp.LinkLocal)
	if err != nil {
		c, _, err = ndp.Listen(ifi, ndp.Addr(vip.String()))
	}
	if err != nil {
		return fmt.Errorf("opening NDP socket on %s: %w", ifi.Name, err)
	}
	defer c.Close()
	na := &ndp.NeighborAdvertisement{
		Override:      true,
		TargetAddress: vip,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: ifi.HardwareAddr}},
	}
	if err := c.WriteTo(na, nil, netip.IPv6LinkLocalAllNodes()); err != nil {
		return fmt.Errorf("sending unsolicited NA for %s on %s: %w", vip, ifi.Name, err)
	}
	return nil
}
