package l2

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ndp"
)

var mac = net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}

func TestGratuitousARP(t *testing.T) {
	vip := netip.MustParseAddr("192.0.2.100")
	pkts, err := GratuitousARP(mac, vip)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkts) != 2 || pkts[0].Operation != arp.OperationRequest || pkts[1].Operation != arp.OperationReply {
		t.Fatalf("want a request then a reply, got %+v", pkts)
	}
	for _, p := range pkts {
		b, err := p.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back arp.Packet
		if err := back.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if back.SenderIP != vip || back.TargetIP != vip || !bytes.Equal(back.SenderHardwareAddr, mac) ||
			back.TargetHardwareAddr.String() != "ff:ff:ff:ff:ff:ff" {
			t.Errorf("op %v: %+v", p.Operation, back)
		}
	}
	if _, err := GratuitousARP(mac, netip.MustParseAddr("2001:db8::1")); err == nil {
		t.Error("an IPv6 address made a gratuitous ARP")
	}
}

func TestUnsolicitedNA(t *testing.T) {
	vip := netip.MustParseAddr("2001:db8::100")
	b, err := ndp.MarshalMessage(UnsolicitedNA(mac, vip))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ndp.ParseMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	na, ok := m.(*ndp.NeighborAdvertisement)
	if !ok || !na.Override || na.Solicited || na.Router || na.TargetAddress != vip || len(na.Options) != 1 {
		t.Fatalf("%+v", m)
	}
	lla, ok := na.Options[0].(*ndp.LinkLayerAddress)
	if !ok || lla.Direction != ndp.Target || !bytes.Equal(lla.Addr, mac) {
		t.Errorf("option %+v", na.Options[0])
	}
}
