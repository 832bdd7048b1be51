package acd

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
)

var vip6 = netip.MustParseAddr("2001:db8::100")

func TestProbesAreNotClaims(t *testing.T) {
	p, err := Probe4(selfMAC, vip)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ClaimARP(p, vip); ok {
		t.Fatal("an ARP probe (sender 0.0.0.0) claims nothing")
	}
	if p.SenderIP != netip.IPv4Unspecified() || p.TargetIP != vip || p.Operation != arp.OperationRequest {
		t.Fatalf("probe %+v", p)
	}
	if _, ok := ClaimNDP(Probe6(selfMAC, vip6), vip6); ok {
		t.Fatal("a solicitation claims nothing")
	}
}

func TestClaims(t *testing.T) {
	reply, _ := arp.NewPacket(arp.OperationReply, foreign, vip, selfMAC, netip.IPv4Unspecified())
	if c, ok := ClaimARP(reply, vip); !ok || c.MAC.String() != foreign.String() || c.Announced {
		t.Fatalf("the answer to a probe: %+v %v", c, ok)
	}
	garp, _ := arp.NewPacket(arp.OperationRequest, foreign, vip, ethernet.Broadcast, vip)
	if c, ok := ClaimARP(garp, vip); !ok || c.MAC.String() != foreign.String() || !c.Announced {
		t.Fatalf("a gratuitous ARP: %+v %v; want an announcement", c, ok)
	}
	other, _ := arp.NewPacket(arp.OperationReply, foreign, netip.MustParseAddr("192.0.2.1"), selfMAC, vip)
	if _, ok := ClaimARP(other, vip); ok {
		t.Fatal("another address's packet claims nothing")
	}
	na := &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: vip6,
		Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: foreign}}}
	if c, ok := ClaimNDP(na, vip6); !ok || c.MAC.String() != foreign.String() || c.Announced {
		t.Fatalf("a solicited neighbour advertisement: %+v %v", c, ok)
	}
	na.Solicited = false
	if c, ok := ClaimNDP(na, vip6); !ok || !c.Announced {
		t.Fatalf("an unsolicited neighbour advertisement: %+v %v; want an announcement", c, ok)
	}
	na.Options = nil
	if _, ok := ClaimNDP(na, vip6); ok {
		t.Fatal("an advertisement without a link-layer address names no host")
	}
}

// etherFrame returns an Ethernet frame carrying p, from its sender.
func etherFrame(t testing.TB, p *arp.Packet) []byte {
	pb, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	fb, err := (&ethernet.Frame{Destination: ethernet.Broadcast, Source: p.SenderHardwareAddr, EtherType: ethernet.EtherTypeARP, Payload: pb}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return fb
}

// malformed is an ARP frame with the VIP at the sender protocol address
// offset (it passes the socket's BPF filter) and a hardware address length
// that makes the packet longer than the frame: the parser refuses it.
func malformed(t testing.TB) []byte {
	reply, _ := arp.NewPacket(arp.OperationReply, foreign, vip, selfMAC, netip.IPv4Unspecified())
	b := etherFrame(t, reply)
	b[14+4] = 200 // HLEN
	var p arp.Packet
	if p.UnmarshalBinary(b[14:]) == nil {
		t.Fatal("the malformed frame parses")
	}
	return b
}

// queue is a frame source that hands out its frames, then io.EOF.
type queue [][]byte

func (q *queue) ReadFrom(b []byte) (int, net.Addr, error) {
	if len(*q) == 0 {
		return 0, nil, io.EOF
	}
	n := copy(b, (*q)[0])
	*q = (*q)[1:]
	return n, nil, nil
}

// TestMalformedFramesDoNotEndTheWire: a frame that does not parse is
// skipped and the next claim is read. Issue 32 finding 5: arp.Client's Read
// returned it as an error, the wire was closed and reopened 250 ms later,
// and four such frames a second switched the check off.
func TestMalformedFramesDoNotEndTheWire(t *testing.T) {
	if _, ok := ClaimFrame(malformed(t), vip); ok {
		t.Fatal("a malformed frame claims nothing")
	}
	reply, _ := arp.NewPacket(arp.OperationReply, foreign, vip, selfMAC, netip.IPv4Unspecified())
	q := queue{malformed(t), {1, 2, 3}, malformed(t), etherFrame(t, reply)}
	w := &arpWire{pc: &q, vip: vip}
	c, err := w.Read()
	if err != nil || c.MAC.String() != foreign.String() {
		t.Fatalf("read %v, %v; want %v after the malformed frames", c.MAC, err, foreign)
	}
}

// FuzzClaims: arbitrary bytes as an Ethernet frame and as an ICMPv6
// message: never a panic, and a claim only where the wire format says one
// is — checked against the byte offsets of RFC 826's variable-length
// format, not the parser: an ARP frame (EtherType 0x0806) with 4-byte
// protocol addresses whose sender protocol address is the VIP and whose
// sender hardware address (HLEN bytes) is that of the claim and not all
// zero; a neighbour advertisement (type 136) for the VIP.
func FuzzClaims(f *testing.F) {
	reply, _ := arp.NewPacket(arp.OperationReply, foreign, vip, selfMAC, netip.IPv4Unspecified())
	f.Add(etherFrame(f, reply))
	f.Add(malformed(f))
	probe, _ := Probe4(selfMAC, vip)
	f.Add(etherFrame(f, probe))
	other, _ := arp.NewPacket(arp.OperationReply, foreign, netip.MustParseAddr("192.0.2.1"), selfMAC, vip)
	f.Add(etherFrame(f, other))
	nb, _ := ndp.MarshalMessage(&ndp.NeighborAdvertisement{TargetAddress: vip6,
		Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: foreign}}})
	f.Add(nb)
	f.Add(nb[:len(nb)-3])
	v4, v6 := vip.As4(), vip6.As16()
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, ok := ClaimFrame(b, vip); ok {
			mac := c.MAC
			hlen := 0
			if len(b) > 18 {
				hlen = int(b[18])
			}
			if len(b) < 22+hlen+4 || b[12] != 0x08 || b[13] != 0x06 || b[19] != 4 ||
				!bytes.Equal(b[22+hlen:22+hlen+4], v4[:]) || !bytes.Equal(mac, b[22:22+hlen]) || allZero(mac) {
				t.Fatalf("claim %v from frame %x", mac, b)
			}
			if c.Announced != bytes.Equal(b[22+2*hlen+4:22+2*hlen+8], v4[:]) {
				t.Fatalf("announced %v from frame %x: an announcement is one whose target is the VIP too", c.Announced, b)
			}
		}
		if c, ok := ClaimMessage(b, vip6); ok {
			mac := c.MAC
			if len(b) < 24 || b[0] != 136 || !bytes.Equal(b[8:24], v6[:]) || len(mac) == 0 || allZero(mac) {
				t.Fatalf("claim %v from message %x", mac, b)
			}
		}
	})
}
