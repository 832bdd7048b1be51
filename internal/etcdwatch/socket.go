package etcdwatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// diagSocket is a NETLINK_SOCK_DIAG socket kept open and asked by raw
// system calls, as the daemon's other periodic I/O is (internal/quietio):
// a look costs a send and a few receives, no socket set-up. A dump, or a
// lookup of one socket, is answered synchronously by the kernel (the first
// part on send, the rest on each receive), so the receives never wait
// (MSG_DONTWAIT: a missing part is an error, not a hang). A dump's cost is
// the kernel's walk of its whole TCP hash table (BenchmarkDump); a
// lookup's, a hash lookup (BenchmarkLookup).
type diagSocket struct {
	fd  int // -1: not open
	seq uint32
	buf []byte
}

func newDiagSocket() *diagSocket { return &diagSocket{fd: -1, buf: make([]byte, 32<<10)} }

// dump reads the TCP sockets of this network namespace, both families,
// with a local or remote port in ports.
func (d *diagSocket) dump(ports []uint16) ([]sock, error) {
	if len(ports) == 0 || len(ports) > maxPorts {
		return nil, fmt.Errorf("%d etcd ports: 1-%d", len(ports), maxPorts)
	}
	if err := d.open(); err != nil {
		return nil, err
	}
	filter := portFilter(ports)
	var out []sock
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		d.seq++
		got, err := d.dumpFamily(diagRequest(fam, d.seq, filter), d.seq, false)
		if err != nil {
			d.reset()
			return nil, fmt.Errorf("sock_diag (family %d): %w", fam, err)
		}
		out = append(out, got...)
	}
	return out, nil
}

// lookup asks for each of socks again, alone (lookupRequest: a hash
// lookup each, not a walk of the whole table), and returns those still
// there as they are now.
func (d *diagSocket) lookup(socks []sock) ([]sock, error) {
	if err := d.open(); err != nil {
		return nil, err
	}
	var out []sock
	for _, s := range socks {
		d.seq++
		got, err := d.dumpFamily(lookupRequest(s, d.seq), d.seq, true)
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESTALE):
			// Closed, or its 4-tuple reused by a new connection (the
			// cookie differs: ENOENT, ESTALE before Linux 4.4): gone.
		case err != nil:
			d.reset()
			return nil, fmt.Errorf("sock_diag lookup of %s: %w", s.remote, err)
		default:
			out = append(out, got...)
		}
	}
	return out, nil
}

func (d *diagSocket) open() error {
	if d.fd >= 0 {
		return nil
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return fmt.Errorf("sock_diag socket: %w", err)
	}
	d.fd = fd
	return nil
}

// reset closes the socket after a failed request: whatever is left unread
// would answer the next one. The next request opens a new socket.
func (d *diagSocket) reset() {
	_ = unix.Close(d.fd)
	d.fd = -1
}

var (
	errInterrupted = errors.New("dump interrupted by a change: incomplete")
	errNoAnswer    = errors.New("no answer")
)

// dumpFamily sends req and reads its answer: a dump's, up to NLMSG_DONE;
// a lone one's (a lookup), one message.
func (d *diagSocket) dumpFamily(req []byte, seq uint32, lone bool) ([]sock, error) {
	var to unix.RawSockaddrNetlink
	to.Family = unix.AF_NETLINK
	if _, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(d.fd), uintptr(unsafe.Pointer(&req[0])), uintptr(len(req)), 0,
		uintptr(unsafe.Pointer(&to)), unsafe.Sizeof(to)); e != 0 {
		return nil, e
	}
	var out []sock
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(d.fd), uintptr(unsafe.Pointer(&d.buf[0])), uintptr(len(d.buf)),
			unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == unix.EAGAIN:
			return nil, errNoAnswer
		case e != 0:
			return nil, e
		}
		done, err := readDump(d.buf[:n], seq, func(s sock) { out = append(out, s) })
		if err != nil || done || lone && len(out) > 0 {
			return out, err
		}
	}
}

// readDump reads one datagram of a dump's answer, giving each socket to
// add; done at NLMSG_DONE. Messages of another sequence number (an
// earlier request's leftovers) are skipped.
func readDump(b []byte, seq uint32, add func(sock)) (done bool, err error) {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		typ := binary.NativeEndian.Uint16(b[4:])
		flags := binary.NativeEndian.Uint16(b[6:])
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return false, fmt.Errorf("netlink message of length %d in %d bytes", l, len(b))
		}
		msgSeq := binary.NativeEndian.Uint32(b[8:])
		body := b[unix.NLMSG_HDRLEN:l]
		b = b[min(len(b), (l+3)&^3):]
		if msgSeq != seq {
			continue
		}
		switch typ {
		case unix.NLMSG_DONE:
			if flags&unix.NLM_F_DUMP_INTR != 0 {
				return true, errInterrupted
			}
			return true, nil
		case unix.NLMSG_ERROR:
			if len(body) >= 4 {
				if errno := int32(binary.NativeEndian.Uint32(body)); errno < 0 {
					return true, unix.Errno(-errno)
				}
			}
			return true, errors.New("netlink error message")
		case sockDiagByFamily:
			if flags&unix.NLM_F_DUMP_INTR != 0 {
				return true, errInterrupted
			}
			s, err := parseDiag(body)
			if err != nil {
				return true, err
			}
			add(s)
		}
	}
	return false, nil
}
