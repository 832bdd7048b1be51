package acd

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
)

// ndpWire probes an IPv6 VIP with a neighbour solicitation to its
// solicited-node group and reads the neighbour advertisements for it.
type ndpWire struct {
	c     *ndp.Conn
	mac   net.HardwareAddr
	vip   netip.Addr
	group netip.Addr
}

// OpenNDP opens the wire of an IPv6 vip on ifi: a raw ICMPv6 socket that
// takes neighbour advertisements only. It needs CAP_NET_RAW and a link-local
// address on ifi that finished duplicate address detection.
func OpenNDP(ifi *net.Interface, vip netip.Addr) (Wire, error) {
	group, err := ndp.SolicitedNodeMulticast(vip)
	if err != nil {
		return nil, err
	}
	c, _, err := ndp.Listen(ifi, ndp.LinkLocal)
	if err != nil {
		return nil, fmt.Errorf("opening an NDP socket on %s: %w", ifi.Name, err)
	}
	var f ipv6.ICMPFilter
	f.SetAll(true)
	f.Accept(ipv6.ICMPTypeNeighborAdvertisement)
	if err := c.SetICMPFilter(&f); err != nil {
		c.Close()
		return nil, fmt.Errorf("filtering the NDP socket on %s: %w", ifi.Name, err)
	}
	return &ndpWire{c: c, mac: ifi.HardwareAddr, vip: vip, group: group}, nil
}

// Probe implements Wire: who-has the VIP, to its solicited-node group with
// our link-layer address. A host that has the VIP answers with a neighbour
// advertisement carrying its own (RFC 4861 section 7.2.4: a solicitation
// sent to a multicast group gets the target link-layer address option).
func (w *ndpWire) Probe() error {
	return w.c.WriteTo(Probe6(w.mac, w.vip), nil, w.group)
}

// Probe6 returns the neighbour solicitation that probes vip from mac.
func Probe6(mac net.HardwareAddr, vip netip.Addr) *ndp.NeighborSolicitation {
	return &ndp.NeighborSolicitation{TargetAddress: vip,
		Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: mac}}}
}

// Read implements Wire. A message that does not parse is skipped, never
// an error that would close the wire (arpWire.Read says why).
func (w *ndpWire) Read() (Claim, error) {
	buf := make([]byte, 1500)
	for {
		n, _, _, err := w.c.ReadRaw(buf)
		if err != nil {
			return Claim{}, err
		}
		if c, ok := ClaimMessage(buf[:n], w.vip); ok {
			return c, nil
		}
	}
}

// ClaimMessage returns the host claiming vip in an ICMPv6 message
// (ClaimNDP); one that does not parse claims nothing.
func ClaimMessage(b []byte, vip netip.Addr) (Claim, bool) {
	m, err := ndp.ParseMessage(b)
	if err != nil {
		return Claim{}, false
	}
	return ClaimNDP(m, vip)
}

// ClaimNDP returns the host claiming vip in an NDP message: the target
// link-layer address of a neighbour advertisement for vip. One not
// solicited is an announcement.
func ClaimNDP(m ndp.Message, vip netip.Addr) (Claim, bool) {
	na, ok := m.(*ndp.NeighborAdvertisement)
	if !ok || na.TargetAddress != vip {
		return Claim{}, false
	}
	for _, o := range na.Options {
		if l, ok := o.(*ndp.LinkLayerAddress); ok && l.Direction == ndp.Target && !allZero(l.Addr) {
			return Claim{MAC: l.Addr, Announced: !na.Solicited}, true
		}
	}
	return Claim{}, false
}

func (w *ndpWire) Close() error { return w.c.Close() }
