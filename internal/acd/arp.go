package acd

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// arpWire probes an IPv4 VIP with RFC 5227 ARP probes and reads the ARP
// packets whose sender is the VIP: answers to anyone's probe, gratuitous ARP,
// a holder's own requests.
type arpWire struct {
	c   *arp.Client // writes
	pc  frames      // reads: frames parsed here, a malformed one skipped
	mac net.HardwareAddr
	vip netip.Addr
}

// frames is where an arpWire reads Ethernet frames (a *packet.Conn).
type frames interface {
	ReadFrom(b []byte) (int, net.Addr, error)
}

// spaOffset is where an Ethernet frame's ARP sender protocol address starts.
const spaOffset = 14 + 8 + 6

// OpenARP opens the wire of an IPv4 vip on ifi. Its socket takes only the
// ARP packets sent from the VIP (a BPF filter): the rest of the segment's
// ARP traffic never wakes us. It needs CAP_NET_RAW and an IPv4 address on ifi.
func OpenARP(ifi *net.Interface, vip netip.Addr) (Wire, error) {
	filter, err := senderFilter(vip)
	if err != nil {
		return nil, err
	}
	pc, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ARP, &packet.Config{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("opening an ARP socket on %s: %w", ifi.Name, err)
	}
	c, err := arp.New(ifi, pc)
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("opening an ARP socket on %s: %w", ifi.Name, err)
	}
	return &arpWire{c: c, pc: pc, mac: ifi.HardwareAddr, vip: vip}, nil
}

// senderFilter accepts the ARP frames whose sender protocol address is vip.
func senderFilter(vip netip.Addr) ([]bpf.RawInstruction, error) {
	a := vip.As4()
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: spaOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: binary.BigEndian.Uint32(a[:]), SkipFalse: 1},
		bpf.RetConstant{Val: 1500},
		bpf.RetConstant{Val: 0},
	})
}

// Probe implements Wire: an ARP probe (RFC 5227 section 2.1.1), who-has the
// VIP from sender address 0.0.0.0, broadcast. Any host that has the VIP
// answers it; none learns anything from it.
func (w *arpWire) Probe() error {
	p, err := Probe4(w.mac, w.vip)
	if err != nil {
		return err
	}
	return w.c.WriteTo(p, ethernet.Broadcast)
}

// Probe4 returns the ARP probe for vip sent from mac.
func Probe4(mac net.HardwareAddr, vip netip.Addr) (*arp.Packet, error) {
	return arp.NewPacket(arp.OperationRequest, mac, netip.IPv4Unspecified(), make(net.HardwareAddr, len(mac)), vip)
}

// Read implements Wire. A frame that does not parse claims nothing and is
// skipped, never an error that ends the wire: a few malformed frames
// carrying the VIP a second would switch the check off. So it reads the
// frames itself, as arp.Client's Read returns such a frame as an error
// (TestMalformedFramesDoNotEndTheWire).
func (w *arpWire) Read() (Claim, error) {
	buf := make([]byte, 1500)
	for {
		n, _, err := w.pc.ReadFrom(buf)
		if err != nil {
			return Claim{}, err
		}
		if c, ok := ClaimFrame(buf[:n], w.vip); ok {
			return c, nil
		}
	}
}

// ClaimFrame returns the host claiming vip in an Ethernet frame: an ARP
// packet whose sender protocol address is vip (ClaimARP). Anything else,
// a frame that does not parse included, claims nothing.
func ClaimFrame(b []byte, vip netip.Addr) (Claim, bool) {
	var f ethernet.Frame
	if f.UnmarshalBinary(b) != nil || f.EtherType != ethernet.EtherTypeARP {
		return Claim{}, false
	}
	var p arp.Packet
	if p.UnmarshalBinary(f.Payload) != nil {
		return Claim{}, false
	}
	return ClaimARP(&p, vip)
}

// ClaimARP returns the host claiming vip in an ARP packet: its sender, when
// the sender protocol address is vip (a probe's sender address is 0.0.0.0).
// A gratuitous ARP (target address vip too) is an announcement; an answer
// to a probe is addressed to the prober's 0.0.0.0.
func ClaimARP(p *arp.Packet, vip netip.Addr) (Claim, bool) {
	if p.SenderIP != vip || allZero(p.SenderHardwareAddr) {
		return Claim{}, false
	}
	return Claim{MAC: p.SenderHardwareAddr, Announced: p.TargetIP == vip}, true
}

func (w *arpWire) Close() error { return w.c.Close() }

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
