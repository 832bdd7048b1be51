package bfd

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRawReceiveAndSend: a datagram sent by a sender reaches a receiver
// with its source address and TTL, for both families, without allocating.
func TestRawReceiveAndSend(t *testing.T) {
	for _, tt := range []struct {
		network, addr   string
		level, opt, ttl int
	}{
		{"udp4", "127.0.0.1:0", unix.IPPROTO_IP, unix.IP_RECVTTL, 64},
		{"udp6", "[::1]:0", unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 64},
	} {
		lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
			return setsockopt(rc, tt.level, tt.opt, 1)
		}}
		pc, err := lc.ListenPacket(context.Background(), tt.network, tt.addr)
		if err != nil {
			t.Skipf("%s: %v", tt.network, err)
		}
		defer pc.Close()
		r, err := newReceiver(pc.(*net.UDPConn))
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.DialUDP(tt.network, nil, pc.LocalAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := newSender(c)
		if err != nil {
			t.Fatal(err)
		}
		want := netip.MustParseAddrPort(c.LocalAddr().String()).Addr()
		payload := []byte("bfd control packet")
		allocs := testing.AllocsPerRun(100, func() {
			if err := s.write(payload); err != nil {
				t.Fatal(err)
			}
			raw, oob, src, err := r.read()
			if err != nil || !bytes.Equal(raw, payload) || src != want || ttlFrom(oob) != tt.ttl {
				t.Fatalf("%s: read %q from %v TTL %d, %v; want %q from %v TTL %d", tt.network, raw, src, ttlFrom(oob), err, payload, want, tt.ttl)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per packet, want 0", tt.network, allocs)
		}
	}
}
