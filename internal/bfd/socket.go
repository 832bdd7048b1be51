package bfd

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// listen opens the receive socket of one family on port 3784, asking the
// kernel for each packet's TTL / hop limit.
func listen(v6 bool) (*net.UDPConn, error) {
	network, addr, level, opt := "udp4", "0.0.0.0:3784", unix.IPPROTO_IP, unix.IP_RECVTTL
	if v6 {
		network, addr, level, opt = "udp6", "[::]:3784", unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT
	}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		return setsockopt(rc, level, opt, 1)
	}}
	pc, err := lc.ListenPacket(context.Background(), network, addr)
	if err != nil {
		return nil, fmt.Errorf("listening on UDP %s: %w", addr, err)
	}
	return pc.(*net.UDPConn), nil
}

// dial opens a session's send socket: a source port from 49152-65535 (RFC
// 5881 section 4), TTL 255, connected to the peer's port 3784 and bound to
// the interface the route to the peer uses.
func dial(peer netip.Addr, rng *rand.Rand) (*net.UDPConn, int, error) {
	level, opt := unix.IPPROTO_IP, unix.IP_TTL
	network, local := "udp4", "0.0.0.0"
	if peer.Is6() {
		level, opt, network, local = unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, "udp6", "::"
	}
	ifname := egressInterface(peer)
	var lastErr error
	for range 64 {
		port := SrcPortMin + rng.IntN(SrcPortMax-SrcPortMin+1)
		d := net.Dialer{
			LocalAddr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(local), uint16(port))),
			Control: func(_, _ string, rc syscall.RawConn) error {
				if err := setsockopt(rc, level, opt, TTL); err != nil {
					return err
				}
				if ifname == "" {
					return nil
				}
				var serr error
				if err := rc.Control(func(fd uintptr) { serr = unix.BindToDevice(int(fd), ifname) }); err != nil {
					return err
				}
				return serr
			},
		}
		c, err := d.Dial(network, netip.AddrPortFrom(peer, DstPort).String())
		if err == nil {
			return c.(*net.UDPConn), port, nil
		}
		lastErr = err // port in use: try another
	}
	return nil, 0, fmt.Errorf("opening a BFD source port to %s: %w", peer, lastErr)
}

// egressInterface returns the interface of the route to peer, or "".
func egressInterface(peer netip.Addr) string {
	routes, err := netlink.RouteGet(peer.AsSlice())
	if err != nil || len(routes) == 0 {
		return ""
	}
	link, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return ""
	}
	return link.Attrs().Name
}

func setsockopt(rc syscall.RawConn, level, opt, value int) error {
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, opt, value) }); err != nil {
		return err
	}
	return serr
}

// ttlFrom finds the TTL / hop limit in the control messages without
// allocating; -1 when absent.
func ttlFrom(oob []byte) int {
	for len(oob) >= unix.SizeofCmsghdr {
		// struct cmsghdr: a size_t length, then int level and int type.
		var n int
		if unix.SizeofCmsghdr == 16 {
			n = int(binary.NativeEndian.Uint64(oob))
		} else {
			n = int(binary.NativeEndian.Uint32(oob))
		}
		if n < unix.SizeofCmsghdr || n > len(oob) {
			return -1
		}
		level := int(int32(binary.NativeEndian.Uint32(oob[unix.SizeofCmsghdr-8:])))
		typ := int(int32(binary.NativeEndian.Uint32(oob[unix.SizeofCmsghdr-4:])))
		data := oob[unix.SizeofCmsghdr:n]
		if (level == unix.IPPROTO_IP && typ == unix.IP_TTL) || (level == unix.IPPROTO_IPV6 && typ == unix.IPV6_HOPLIMIT) {
			if len(data) >= 4 {
				return int(binary.NativeEndian.Uint32(data))
			}
			if len(data) >= 1 {
				return int(data[0])
			}
		}
		if cmsgAlign(n) > len(oob) {
			return -1 // the last message, unpadded
		}
		oob = oob[cmsgAlign(n):]
	}
	return -1
}

func cmsgAlign(n int) int {
	align := unix.SizeofCmsghdr / 2 // sizeof(size_t)
	return (n + align - 1) &^ (align - 1)
}
