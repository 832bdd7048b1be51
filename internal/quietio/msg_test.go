package quietio

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// TestSendMsg: a datagram sent with an IP_PKTINFO control message (a
// source address, as VRRP sends its adverts) arrives from that source.
func TestSendMsg(t *testing.T) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	tx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	rc, err := tx.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	oob := (&ipv4.ControlMessage{Src: net.IPv4(127, 0, 0, 2)}).Marshal()
	if err := SendMsg(rc, []byte("advert"), oob, to); err != nil {
		t.Fatal(err)
	}
	var b [16]byte
	n, from, err := rx.ReadFromUDPAddrPort(b[:])
	if err != nil || string(b[:n]) != "advert" || from.Addr() != netip.MustParseAddr("127.0.0.2") {
		t.Fatalf("read %q from %v, %v; want \"advert\" from 127.0.0.2", b[:n], from, err)
	}
}

func TestIfIndex(t *testing.T) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skip(err)
	}
	if i, err := IfIndex(fd, "lo"); i != lo.Index || err != nil {
		t.Errorf("IfIndex(lo) = %d, %v; want %d", i, err, lo.Index)
	}
	if _, err := IfIndex(fd, "nonexistent0"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("IfIndex(nonexistent0) = %v, want ENODEV", err)
	}
}
