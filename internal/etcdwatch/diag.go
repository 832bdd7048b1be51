package etcdwatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// The sock_diag request (linux/inet_diag.h): TCP sockets of one family in
// the states a look needs, with tcp_info, and a bytecode filter so the
// kernel returns only those with a local or remote port of etcd's — a
// busy control-plane node has tens of thousands of others.
const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	diagReqLen       = 56 // struct inet_diag_req_v2
	diagMsgLen       = 72 // struct inet_diag_msg
	diagIDLen        = 48 // struct inet_diag_sockid: at 8 in the request, at 4 in the message
	diagInfo         = 2  // INET_DIAG_INFO: struct tcp_info
	diagReqBytecode  = 1  // INET_DIAG_REQ_BYTECODE
	bcJump           = 1  // INET_DIAG_BC_JMP: always goes by "no"
	bcSrcEq          = 11 // INET_DIAG_BC_S_EQ
	bcDstEq          = 12 // INET_DIAG_BC_D_EQ
	maxPorts         = 64
	states           = 1<<stateEstablished | 1<<stateCloseWait | 1<<stateListen
)

// diagRequest is a netlink message asking for a dump of one family's
// sockets through filter: nlmsghdr, struct inet_diag_req_v2, the
// bytecode attribute.
func diagRequest(family uint8, seq uint32, filter []byte) []byte {
	attrLen := 4 + len(filter)
	b := diagHeader(unix.NLMSG_HDRLEN+diagReqLen+(attrLen+3)&^3, family, seq, unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	a := b[unix.NLMSG_HDRLEN+diagReqLen:]
	binary.NativeEndian.PutUint16(a[0:], uint16(attrLen))
	binary.NativeEndian.PutUint16(a[2:], diagReqBytecode)
	copy(a[4:], filter)
	return b
}

// lookupRequest asks for one socket, named as a dump named it (its cookie
// included): the kernel looks it up in its hash table instead of walking
// the table (inet_diag_find_one_icsk), and answers with one message, or
// one error: ENOENT when it is gone, its 4-tuple unused or reused by
// another connection (the cookie differs; before Linux 4.4, ESTALE).
func lookupRequest(s sock, seq uint32) []byte {
	b := diagHeader(unix.NLMSG_HDRLEN+diagReqLen, s.family, seq, unix.NLM_F_REQUEST)
	copy(b[unix.NLMSG_HDRLEN+8:], s.id[:])
	return b
}

// diagHeader is a request of n bytes: nlmsghdr and struct
// inet_diag_req_v2 for TCP sockets of family in the states a look needs,
// with tcp_info.
func diagHeader(n int, family uint8, seq uint32, flags uint16) []byte {
	b := make([]byte, n)
	binary.NativeEndian.PutUint32(b[0:], uint32(n))
	binary.NativeEndian.PutUint16(b[4:], sockDiagByFamily)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	r := b[unix.NLMSG_HDRLEN:]
	r[0], r[1], r[2] = family, unix.IPPROTO_TCP, 1<<(diagInfo-1)
	binary.NativeEndian.PutUint32(r[4:], states)
	return b
}

// portFilter is bytecode accepting a socket whose source or destination
// port is one of ports, laid out as ss(8) lays out "a or b": conditions
// of 8 bytes (the op, and the port in a second op's "no"), true going on
// to the jump after it (to the end: accept), false skipping that jump to
// the next condition, the last false past the end (reject). The kernel's
// audit follows the "true" path, so every target must lie on it.
func portFilter(ports []uint16) []byte {
	n := 2 * len(ports)
	total := 12*n - 4
	b := make([]byte, 0, total)
	for i := range n {
		code := uint8(bcSrcEq)
		if i%2 == 1 {
			code = bcDstEq
		}
		b = append(b, code, 8)
		b = binary.NativeEndian.AppendUint16(b, 12)
		b = append(b, 0, 0)
		b = binary.NativeEndian.AppendUint16(b, ports[i/2])
		if i < n-1 {
			b = append(b, bcJump, 4)
			b = binary.NativeEndian.AppendUint16(b, uint16(total-len(b)+2)) // from the jump (2 bytes back) to the end
		}
	}
	return b
}

var errShort = errors.New("message too short")

// parseDiag reads one struct inet_diag_msg and its attributes, tcp_info's
// fields that a look needs among them (those a kernel's shorter tcp_info
// lacks stay zero).
func parseDiag(b []byte) (sock, error) {
	if len(b) < diagMsgLen {
		return sock{}, fmt.Errorf("inet_diag_msg of %d bytes: %w", len(b), errShort)
	}
	var s sock
	addr := func(a []byte) (netip.Addr, error) {
		switch b[0] {
		case unix.AF_INET:
			return netip.AddrFrom4([4]byte(a[:4])), nil
		case unix.AF_INET6:
			return netip.AddrFrom16([16]byte(a[:16])).Unmap(), nil
		}
		return netip.Addr{}, fmt.Errorf("address family %d", b[0])
	}
	src, err := addr(b[8:24])
	if err != nil {
		return sock{}, err
	}
	dst, _ := addr(b[24:40])
	s.state, s.family = b[1], b[0]
	copy(s.id[:], b[4:4+diagIDLen])
	s.local = netip.AddrPortFrom(src, binary.BigEndian.Uint16(b[4:6]))
	s.remote = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[6:8]))
	s.rqueue = binary.NativeEndian.Uint32(b[56:60])
	for a := b[diagMsgLen:]; len(a) >= 4; {
		l := int(binary.NativeEndian.Uint16(a[0:2]))
		if l < 4 || l > len(a) {
			return sock{}, fmt.Errorf("attribute of length %d in %d bytes", l, len(a))
		}
		if binary.NativeEndian.Uint16(a[2:4]) == diagInfo {
			s.readInfo(a[4:l])
		}
		a = a[min(len(a), (l+3)&^3):]
	}
	return s, nil
}

// readInfo takes what a look needs from struct tcp_info (linux/tcp.h):
// nothing from one shorter than bytes_received (kernel 4.1).
func (s *sock) readInfo(t []byte) {
	if len(t) < 136 {
		return
	}
	u32 := func(off int) uint32 {
		if off+4 > len(t) {
			return 0
		}
		return binary.NativeEndian.Uint32(t[off:])
	}
	s.haveInfo = true
	s.timeouts = t[2]
	s.lostOut, s.retransOut = u32(32), u32(36)
	s.lastAck = time.Duration(u32(56)) * time.Millisecond
	s.totalRetrans = u32(100)
	s.received = binary.NativeEndian.Uint64(t[128:136])
	s.ooo = u32(224)
}
