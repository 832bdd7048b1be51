package quietio

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hopLimit is the TTL or hop limit in oob (one control message), or -1.
func hopLimit(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 || len(msgs[0].Data) < 4 {
		return -1
	}
	return int(binary.NativeEndian.Uint32(msgs[0].Data))
}

// TestReceiveAndSend: a datagram sent by a Sender reaches a Receiver
// with its source address and TTL, for both families, without allocating.
func TestReceiveAndSend(t *testing.T) {
	for _, tt := range []struct {
		network, addr   string
		level, opt, ttl int
	}{
		{"udp4", "127.0.0.1:0", unix.IPPROTO_IP, unix.IP_RECVTTL, 64},
		{"udp6", "[::1]:0", unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 64},
	} {
		lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), tt.level, tt.opt, 1) }); err != nil {
				return err
			}
			return serr
		}}
		pc, err := lc.ListenPacket(context.Background(), tt.network, tt.addr)
		if err != nil {
			t.Skipf("%s: %v", tt.network, err)
		}
		defer pc.Close()
		r, err := NewReceiver(pc.(*net.UDPConn), 64)
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.DialUDP(tt.network, nil, pc.LocalAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := NewSender(c)
		if err != nil {
			t.Fatal(err)
		}
		want := netip.MustParseAddrPort(c.LocalAddr().String()).Addr()
		payload := []byte("bfd control packet")
		var oob []byte
		allocs := testing.AllocsPerRun(100, func() {
			if err := s.Write(payload); err != nil {
				t.Fatal(err)
			}
			var raw []byte
			var src netip.Addr
			raw, oob, src, err = r.Read()
			if err != nil || !bytes.Equal(raw, payload) || src != want {
				t.Fatalf("%s: read %q from %v, %v; want %q from %v", tt.network, raw, src, err, payload, want)
			}
		})
		if ttl := hopLimit(oob); ttl != tt.ttl {
			t.Errorf("%s: TTL %d in the control message, want %d", tt.network, ttl, tt.ttl)
		}
		if allocs != 0 {
			t.Errorf("%s: %v allocations per packet, want 0", tt.network, allocs)
		}
	}
}

// TestPending: a Receiver says a datagram may wait while the socket has
// one queued or its reader has not parked again since it took one.
func TestPending(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	defer pc.Close()
	r, err := NewReceiver(pc.(*net.UDPConn), 64)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Pending() {
		t.Fatal("a receiver nobody read yet: not pending")
	}
	c, err := net.DialUDP("udp4", nil, pc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// As if a Read had found the socket empty; then a datagram arrives.
	r.parked.Store(true)
	if r.Pending() {
		t.Fatal("parked over an empty socket: pending")
	}
	if _, err := c.Write([]byte("advert")); err != nil {
		t.Fatal(err)
	}
	for i := 0; !r.Pending(); i++ {
		if i == 1000 {
			t.Fatal("a queued datagram: not pending")
		}
		time.Sleep(time.Millisecond)
	}
	if _, _, _, err := r.Read(); err != nil {
		t.Fatal(err)
	}
	if !r.Pending() {
		t.Fatal("the reader took one and has not asked again: not pending")
	}
	done := make(chan struct{})
	go func() { r.Read(); close(done) }()
	for i := 0; r.Pending(); i++ {
		if i == 1000 {
			t.Fatal("the reader parked over an empty socket: still pending")
		}
		time.Sleep(time.Millisecond)
	}
	c.Write([]byte("wake"))
	<-done
}
