package hostile

import (
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/ipv4"
)

// pace is how many packets go out before a short pause, so the receiver's
// socket buffer is not what the test measures.
const pace = 100

// SendVRRP sends packets as IP protocol 112 to dst out of ifname, from the
// calling thread's network namespace, each with its own TTL.
func SendVRRP(pkts []Packet, dst netip.Addr, ifname string) error {
	c, err := net.ListenPacket("ip4:112", "0.0.0.0")
	if err != nil {
		return err
	}
	defer c.Close()
	p := ipv4.NewPacketConn(c)
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	if err := p.SetMulticastInterface(ifi); err != nil {
		return err
	}
	to := &net.IPAddr{IP: dst.AsSlice()}
	for i, pk := range pkts {
		pause(i)
		if err := p.SetMulticastTTL(pk.TTL); err != nil {
			return err
		}
		if err := p.SetTTL(pk.TTL); err != nil {
			return err
		}
		if _, err := p.WriteTo(pk.Payload, nil, to); err != nil {
			return err
		}
	}
	return nil
}

// SendBFD sends packets over UDP to dst:3784 from a source port in the
// RFC 5881 range, each with its own TTL.
func SendBFD(pkts []Packet, dst netip.Addr) error {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: 49999})
	if err != nil {
		return err
	}
	defer c.Close()
	p := ipv4.NewPacketConn(c)
	to := &net.UDPAddr{IP: dst.AsSlice(), Port: 3784}
	for i, pk := range pkts {
		pause(i)
		if err := p.SetTTL(pk.TTL); err != nil {
			return err
		}
		if _, err := p.WriteTo(pk.Payload, nil, to); err != nil {
			return err
		}
	}
	return nil
}

func pause(i int) {
	if i > 0 && i%pace == 0 {
		time.Sleep(20 * time.Millisecond)
	}
}
