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
// a look costs a send and a few receives, no socket set-up, and does not
// wake Go's sysmon thread. A dump is answered synchronously by the kernel
// (the first part on send, the rest on each receive), so the receives
// never wait (MSG_DONTWAIT: a missing part is an error, not a hang).
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
	if d.fd < 0 {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
		if err != nil {
			return nil, fmt.Errorf("sock_diag socket: %w", err)
		}
		d.fd = fd
	}
	filter := portFilter(ports)
	var out []sock
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		d.seq++
		got, err := d.dumpFamily(diagRequest(fam, d.seq, filter), d.seq)
		if err != nil {
			// Whatever is left unread would answer the next request:
			// start again on a new socket.
			_ = unix.Close(d.fd)
			d.fd = -1
			return nil, fmt.Errorf("sock_diag (family %d): %w", fam, err)
		}
		out = append(out, got...)
	}
	return out, nil
}

var (
	errInterrupted = errors.New("dump interrupted by a change: incomplete")
	errNoAnswer    = errors.New("no answer")
)

func (d *diagSocket) dumpFamily(req []byte, seq uint32) ([]sock, error) {
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
		if err != nil || done {
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
