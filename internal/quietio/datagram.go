package quietio

import (
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Receiver reads datagrams, with their control messages and source, from
// one datagram socket (UDP, or raw IP: an IPv4 one gives the IP header
// too), without allocating. One goroutine reads at a time.
type Receiver struct {
	rc    syscall.RawConn
	buf   []byte
	oob   [128]byte
	from  unix.RawSockaddrInet6 // large enough for either family
	iov   unix.Iovec
	msg   unix.Msghdr
	n     int
	errno unix.Errno
	recv  func(fd uintptr) bool // r.recvmsg, bound once
	// parked: the last recvmsg found nothing queued, so Read waits in the
	// poller; false from the moment the next is tried.
	parked atomic.Bool
}

// NewReceiver reads c's datagrams into a buffer of size bytes; a longer
// datagram is cut to size.
func NewReceiver(c syscall.Conn, size int) (*Receiver, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &Receiver{rc: rc, buf: make([]byte, size)}
	r.iov.Base = &r.buf[0]
	r.iov.SetLen(len(r.buf))
	r.msg.Name = (*byte)(unsafe.Pointer(&r.from))
	r.msg.Iov = &r.iov
	r.msg.SetIovlen(1)
	r.msg.Control = &r.oob[0]
	r.recv = r.recvmsg
	return r, nil
}

// Read waits for the next datagram; b and oob are valid until the next Read.
func (r *Receiver) Read() (b, oob []byte, src netip.Addr, err error) {
	if err := r.rc.Read(r.recv); err != nil {
		return nil, nil, netip.Addr{}, err
	}
	if r.errno != 0 {
		return nil, nil, netip.Addr{}, r.errno
	}
	switch r.from.Family {
	case unix.AF_INET:
		src = netip.AddrFrom4((*unix.RawSockaddrInet4)(unsafe.Pointer(&r.from)).Addr)
	case unix.AF_INET6:
		src = netip.AddrFrom16(r.from.Addr).Unmap()
	}
	return r.buf[:min(r.n, len(r.buf))], r.oob[:min(int(r.msg.Controllen), len(r.oob))], src, nil
}

func (r *Receiver) recvmsg(fd uintptr) bool {
	r.parked.Store(false)
	r.msg.Namelen = unix.SizeofSockaddrInet6
	r.msg.SetControllen(len(r.oob))
	n, errno, ready := call(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), 0)
	r.n, r.errno = n, errno
	r.parked.Store(!ready)
	return ready
}

// Pending says whether a datagram may wait for its reader: the socket has
// one queued, or the reader is not parked in Read (it took one and has not
// asked for the next, or it has not read yet). Whatever it answers, a
// datagram queued before the call has been returned by Read once both
// are false. Any goroutine may call it.
func (r *Receiver) Pending() bool {
	if !r.parked.Load() {
		return true
	}
	var n int32
	var errno unix.Errno
	err := r.rc.Control(func(fd uintptr) {
		_, _, errno = unix.RawSyscall(unix.SYS_IOCTL, fd, unix.SIOCINQ, uintptr(unsafe.Pointer(&n)))
	})
	// The reader may have taken the last one between the two looks: then
	// it is no longer parked.
	return err == nil && errno == 0 && n > 0 || !r.parked.Load()
}

// Sender writes datagrams to one connected UDP socket, without allocating.
// One goroutine writes at a time.
type Sender struct {
	rc    syscall.RawConn
	out   []byte
	errno unix.Errno
	send  func(fd uintptr) bool // s.write1, bound once
}

// NewSender writes to c, which must be connected.
func NewSender(c *net.UDPConn) (*Sender, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &Sender{rc: rc}
	s.send = s.write1
	return s, nil
}

// Write sends b as one datagram. A full send buffer (EAGAIN) loses it, as
// the wire may.
func (s *Sender) Write(b []byte) error {
	s.out, s.errno = b, 0
	err := s.rc.Write(s.send)
	s.out = nil
	if err != nil {
		return err
	}
	if s.errno != 0 {
		return s.errno
	}
	return nil
}

func (s *Sender) write1(fd uintptr) bool {
	_, errno, ready := call(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(s.out))), uintptr(len(s.out)))
	if !ready {
		errno = unix.EAGAIN
	}
	s.errno = errno
	return true
}
