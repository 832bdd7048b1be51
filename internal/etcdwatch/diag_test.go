package etcdwatch

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"testing"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestDumpPortsFilters: the kernel returns the sockets on the ports asked
// for, both ends of a connection and the listener, and no other; what
// parseDiag reads of them is what vishvananda/netlink's own parser reads.
func TestDumpPortsFilters(t *testing.T) {
	var ports []uint16
	for range 2 {
		port, c, _ := loopbackConn(t, "tcp4", "127.0.0.1:0")
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		ports = append(ports, port)
	}
	got, err := newDiagSocket().dump(ports[:1])
	if err != nil {
		t.Skipf("no sock_diag here: %v", err)
	}
	var listen, conns int
	for _, s := range got {
		switch {
		case s.local.Port() != ports[0] && s.remote.Port() != ports[0]:
			t.Errorf("socket %v -> %v returned for port %d", s.local, s.remote, ports[0])
		case s.state == stateListen:
			listen++
		default:
			conns++
		}
	}
	// The listener and both ends of the accepted connection.
	if listen != 1 || conns != 2 {
		t.Fatalf("port %d: %d listeners, %d connections: %+v", ports[0], listen, conns, got)
	}
	lib, err := netlink.SocketDiagTCPInfo(unix.AF_INET)
	if err != nil {
		t.Skipf("the library's dump: %v", err)
	}
	for _, s := range got {
		for _, r := range lib {
			m := r.InetDiagMsg
			if m.ID.SourcePort != s.local.Port() || m.ID.DestinationPort != s.remote.Port() || r.TCPInfo == nil {
				continue
			}
			want := sock{
				local:  netip.AddrPortFrom(netip.MustParseAddr(m.ID.Source.String()), m.ID.SourcePort),
				remote: netip.AddrPortFrom(netip.MustParseAddr(m.ID.Destination.String()), m.ID.DestinationPort),
				state:  m.State, rqueue: m.RQueue, received: r.TCPInfo.Bytes_received,
				timeouts: r.TCPInfo.Retransmits, retransOut: r.TCPInfo.Retrans, lostOut: r.TCPInfo.Lost,
				totalRetrans: r.TCPInfo.Total_retrans, ooo: r.TCPInfo.Rcv_ooopack, haveInfo: true,
			}
			want.family = m.Family
			binary.BigEndian.PutUint16(want.id[0:], m.ID.SourcePort)
			binary.BigEndian.PutUint16(want.id[2:], m.ID.DestinationPort)
			copy(want.id[4:20], m.ID.Source.To4())
			copy(want.id[20:36], m.ID.Destination.To4())
			binary.NativeEndian.PutUint32(want.id[36:], m.ID.Interface)
			binary.NativeEndian.PutUint32(want.id[40:], m.ID.Cookie[0])
			binary.NativeEndian.PutUint32(want.id[44:], m.ID.Cookie[1])
			// Milliseconds since the last ACK move between the two dumps.
			want.lastAck = s.lastAck
			if s != want {
				t.Errorf("parseDiag read\n%+v\nthe library read\n%+v", s, want)
			}
		}
	}
}

// TestPortFilterRuns runs the bytecode as the kernel does
// (inet_diag_bc_run) and audits it as the kernel does (every target on
// the "true" path, the end, or 4 past it): the ports asked for pass,
// others do not.
func TestPortFilterRuns(t *testing.T) {
	ports := []uint16{2379, 2380, 9}
	b := portFilter(ports)
	for _, tt := range []struct {
		sport, dport uint16
		want         bool
	}{{2379, 40000, true}, {40000, 2380, true}, {9, 9, true}, {40000, 40001, false}, {2381, 2378, false}} {
		if got := runBC(b, tt.sport, tt.dport); got != tt.want {
			t.Errorf("ports %d -> %d: accepted %v, want %v", tt.sport, tt.dport, got, tt.want)
		}
	}
	onPath := map[int]bool{len(b): true}
	for off := 0; off < len(b); off += int(b[off+1]) {
		onPath[off] = true
	}
	for off := 0; off < len(b); off += int(b[off+1]) {
		if no := off + int(binary.NativeEndian.Uint16(b[off+2:])); !onPath[no] && no != len(b)+4 {
			t.Errorf("op at %d jumps to %d, off the true path", off, no)
		}
	}
}

// runBC is inet_diag_bc_run for the ops portFilter uses.
func runBC(b []byte, sport, dport uint16) bool {
	off := 0
	for off < len(b) {
		yes := false
		port := binary.NativeEndian.Uint16(b[off+6:])
		switch b[off] {
		case bcSrcEq:
			yes = sport == port
		case bcDstEq:
			yes = dport == port
		}
		if yes {
			off += int(b[off+1])
		} else {
			off += int(binary.NativeEndian.Uint16(b[off+2:]))
		}
	}
	return off == len(b)
}

// FuzzParseDiag: any bytes from the kernel give a socket or an error,
// never a panic; a message built from a socket reads back as that socket.
func FuzzParseDiag(f *testing.F) {
	f.Add([]byte{}, uint8(2), uint8(1), uint16(2379), uint16(40000), uint32(7), uint64(5000), uint32(3), 232)
	f.Add([]byte{0xff}, uint8(10), uint8(10), uint16(1), uint16(0), uint32(0), uint64(0), uint32(0), 0)
	f.Add(make([]byte, 80), uint8(2), uint8(8), uint16(2380), uint16(2380), uint32(1), uint64(1), uint32(1), 136)
	f.Fuzz(func(t *testing.T, raw []byte, fam, state uint8, sport, dport uint16, rq uint32, recv uint64, retrans uint32, infoLen int) {
		_, _ = parseDiag(raw) // arbitrary bytes: an answer or an error
		if fam != unix.AF_INET && fam != unix.AF_INET6 {
			fam = unix.AF_INET
		}
		infoLen = max(0, min(infoLen, 300))
		msg := make([]byte, diagMsgLen)
		msg[0], msg[1] = fam, state
		binary.BigEndian.PutUint16(msg[4:], sport)
		binary.BigEndian.PutUint16(msg[6:], dport)
		copy(msg[8:], []byte{192, 0, 2, 11})
		copy(msg[24:], []byte{192, 0, 2, 12})
		if fam == unix.AF_INET6 {
			copy(msg[8:], netip.MustParseAddr("2001:db8::11").AsSlice())
			copy(msg[24:], netip.MustParseAddr("2001:db8::12").AsSlice())
		}
		binary.NativeEndian.PutUint32(msg[56:], rq)
		info := make([]byte, infoLen)
		if infoLen >= 136 {
			binary.NativeEndian.PutUint32(info[100:], retrans)
			binary.NativeEndian.PutUint64(info[128:], recv)
		}
		attr := binary.NativeEndian.AppendUint16(nil, uint16(4+infoLen))
		attr = binary.NativeEndian.AppendUint16(attr, diagInfo)
		attr = append(attr, info...)
		for len(attr)%4 != 0 {
			attr = append(attr, 0)
		}
		s, err := parseDiag(slices.Concat(msg, attr, raw[:0]))
		if err != nil {
			t.Fatalf("a well-formed message: %v", err)
		}
		if s.state != state || s.local.Port() != sport || s.remote.Port() != dport || s.rqueue != rq || s.haveInfo != (infoLen >= 136) {
			t.Fatalf("read %+v from state %d ports %d/%d rqueue %d info %d bytes", s, state, sport, dport, rq, infoLen)
		}
		if s.haveInfo && (s.received != recv || s.totalRetrans != retrans) {
			t.Fatalf("read received %d, retransmitted %d; wrote %d, %d", s.received, s.totalRetrans, recv, retrans)
		}
		if s.local.Addr().Is4() != (fam == unix.AF_INET) {
			t.Fatalf("family %d read as %v", fam, s.local)
		}
	})
}

// FuzzReadDump: any datagram gives sockets, done or an error, never a
// panic, and reads nothing of another request's sequence number.
func FuzzReadDump(f *testing.F) {
	msg := func(typ uint16, seq uint32, body []byte) []byte {
		b := binary.NativeEndian.AppendUint32(nil, uint32(unix.NLMSG_HDRLEN+len(body)))
		b = binary.NativeEndian.AppendUint16(b, typ)
		b = binary.NativeEndian.AppendUint16(b, unix.NLM_F_MULTI)
		b = binary.NativeEndian.AppendUint32(b, seq)
		b = binary.NativeEndian.AppendUint32(b, 0)
		return append(b, body...)
	}
	f.Add(msg(sockDiagByFamily, 1, make([]byte, diagMsgLen)), uint32(1))
	f.Add(slices.Concat(msg(sockDiagByFamily, 2, make([]byte, diagMsgLen)), msg(unix.NLMSG_DONE, 2, make([]byte, 4))), uint32(2))
	f.Add(msg(unix.NLMSG_ERROR, 3, []byte{0xea, 0xff, 0xff, 0xff}), uint32(3))
	f.Add([]byte{1, 2, 3}, uint32(0))
	f.Fuzz(func(t *testing.T, b []byte, seq uint32) {
		var n int
		_, _ = readDump(b, seq, func(sock) { n++ })
		_, _ = readDump(b, seq+1, func(sock) {}) // another sequence: no panic either
		if n > len(b)/(unix.NLMSG_HDRLEN+diagMsgLen) {
			t.Fatalf("%d sockets from %d bytes", n, len(b))
		}
	})
}

func BenchmarkDump(b *testing.B) {
	d := newDiagSocket()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.dump([]uint16{2379, 2380}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLookup asks the kernel for sockets a dump found, one by one: each is
// found as it is now (the bytes received since), and one that does not
// exist is left out without an error.
func TestLookup(t *testing.T) {
	port, cl, srv := loopbackConn(t, "tcp4", "127.0.0.1:0")
	d, all := dumpPort(t, port)
	var conns []sock
	for _, s := range all {
		if s.state == stateEstablished {
			conns = append(conns, s)
		}
	}
	if len(conns) != 2 {
		t.Fatalf("%d established sockets on port %d, want 2: %+v", len(conns), port, all)
	}
	if _, err := cl.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(srv, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	gone := conns[0]
	gone.id[0]++ // another source port: no such socket
	reused := conns[1]
	reused.id[40]++ // the same 4-tuple, another cookie: a connection since reused
	server := conns[0]
	if server.local.Port() != port {
		server = conns[1]
	}
	fallback := server
	fallback.id[2]++ // another remote port: the kernel falls back to the listener, the cookie says no
	got, err := d.lookup(append(slices.Clone(conns), gone, reused, fallback))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("looked up %d sockets, want the 2 that exist: %+v", len(got), got)
	}
	for i, s := range got {
		if s.key() != conns[i].key() {
			t.Fatalf("lookup %d answered %v, asked for %v", i, s.key(), conns[i].key())
		}
		if s.local.Port() == port && s.received != conns[i].received+100 {
			t.Fatalf("the server end received %d bytes, want %d", s.received, conns[i].received+100)
		}
	}
	// Nothing left unread behind the answers, the errors' included.
	n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(d.fd), uintptr(unsafe.Pointer(&d.buf[0])), uintptr(len(d.buf)),
		unix.MSG_DONTWAIT, 0, 0)
	if e != unix.EAGAIN {
		t.Fatalf("after the lookups the socket had more: %d bytes, %v", n, e)
	}
}

// TestLookupV4Mapped: a dual-stack listener's end of an IPv4 connection is
// an AF_INET6 socket with v4-mapped addresses; looked up as the dump named
// it, it is found.
func TestLookupV4Mapped(t *testing.T) {
	port, _, _ := loopbackConn(t, "tcp", "[::]:0") // dialled at 127.0.0.1
	d, all := dumpPort(t, port)
	var mapped []sock
	for _, s := range all {
		if s.state == stateEstablished && s.family == unix.AF_INET6 && s.local.Port() == port {
			mapped = append(mapped, s)
		}
	}
	if len(mapped) != 1 {
		t.Fatalf("%d AF_INET6 server ends, want 1: %+v", len(mapped), all)
	}
	got, err := d.lookup(mapped)
	if err != nil || len(got) != 1 || got[0].key() != mapped[0].key() {
		t.Fatalf("lookup of the v4-mapped server end: %+v, %v", got, err)
	}
}

func BenchmarkLookup(b *testing.B) {
	port, _, _ := loopbackConn(b, "tcp4", "127.0.0.1:0")
	d, all := dumpPort(b, port)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.lookup(all); err != nil {
			b.Fatal(err)
		}
	}
}

// loopbackConn listens on network's address and dials it at 127.0.0.1:
// the port and both ends of one connection, closed at the test's end.
func loopbackConn(t testing.TB, network, address string) (port uint16, cl, srv net.Conn) {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { ln.Close() })
	port = uint16(ln.Addr().(*net.TCPAddr).Port)
	if cl, err = net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if srv, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return port, cl, srv
}

// dumpPort dumps the sockets on port through a new diagSocket, skipping
// the test where sock_diag is refused.
func dumpPort(t testing.TB, port uint16) (*diagSocket, []sock) {
	t.Helper()
	d := newDiagSocket()
	all, err := d.dump([]uint16{port})
	if err != nil {
		t.Skipf("no sock_diag here: %v", err)
	}
	return d, all
}
