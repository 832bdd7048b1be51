package acd

import (
	"net"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
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
	if mac, ok := ClaimARP(reply, vip); !ok || mac.String() != foreign.String() {
		t.Fatalf("the answer to a probe: %v %v", mac, ok)
	}
	other, _ := arp.NewPacket(arp.OperationReply, foreign, netip.MustParseAddr("192.0.2.1"), selfMAC, vip)
	if _, ok := ClaimARP(other, vip); ok {
		t.Fatal("another address's packet claims nothing")
	}
	na := &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: vip6,
		Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: foreign}}}
	if mac, ok := ClaimNDP(na, vip6); !ok || mac.String() != foreign.String() {
		t.Fatalf("a neighbour advertisement: %v %v", mac, ok)
	}
	na.Options = nil
	if _, ok := ClaimNDP(na, vip6); ok {
		t.Fatal("an advertisement without a link-layer address names no host")
	}
}

// FuzzClaims decodes arbitrary bytes as ARP and NDP and extracts a claim:
// never a panic, and a claim only for the VIP with a real hardware address.
func FuzzClaims(f *testing.F) {
	reply, _ := arp.NewPacket(arp.OperationReply, foreign, vip, selfMAC, netip.IPv4Unspecified())
	b, _ := reply.MarshalBinary()
	f.Add(b)
	nb, _ := ndp.MarshalMessage(&ndp.NeighborAdvertisement{TargetAddress: vip6,
		Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: foreign}}})
	f.Add(nb)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p arp.Packet
		if p.UnmarshalBinary(b) == nil {
			if mac, ok := ClaimARP(&p, vip); ok && (p.SenderIP != vip || allZero(mac)) {
				t.Fatalf("claim %v from %+v", mac, p)
			}
		}
		if m, err := ndp.ParseMessage(b); err == nil {
			if mac, ok := ClaimNDP(m, vip6); ok && (allZero(mac) || len(mac) == 0) {
				t.Fatalf("claim %v from %v", net.HardwareAddr(mac), m)
			}
		}
	})
}
