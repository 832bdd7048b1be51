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
	pkts, err := GratuitousARP(ifi.HardwareAddr, vip)
	if err != nil {
		return err
	}
	for _, p := range pkts {
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
	if err := c.WriteTo(UnsolicitedNA(ifi.HardwareAddr, vip), nil, netip.IPv6LinkLocalAllNodes()); err != nil {
		return fmt.Errorf("sending unsolicited NA for %s on %s: %w", vip, ifi.Name, err)
	}
	return nil
}

// GratuitousARP returns the announcement of vip as MetalLB sends it: an ARP
// request and an ARP reply, sender and target protocol address both the VIP,
// target hardware address broadcast.
func GratuitousARP(mac net.HardwareAddr, vip netip.Addr) ([]*arp.Packet, error) {
	var out []*arp.Packet
	for _, op := range []arp.Operation{arp.OperationRequest, arp.OperationReply} {
		p, err := arp.NewPacket(op, mac, vip, ethernet.Broadcast, vip)
		if err != nil {
			return nil, fmt.Errorf("building gratuitous ARP for %s: %w", vip, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// UnsolicitedNA returns the announcement of an IPv6 vip (RFC 4861 section
// 7.2.6): Override set, Solicited clear, our MAC as target link-layer address.
func UnsolicitedNA(mac net.HardwareAddr, vip netip.Addr) *ndp.NeighborAdvertisement {
	return &ndp.NeighborAdvertisement{
		Override:      true,
		TargetAddress: vip,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}},
	}
}
