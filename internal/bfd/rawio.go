package bfd

import (
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BFD's packets go in and out by raw system calls inside the netpoller's
// RawConn callbacks: the runtime still parks the reader until its socket
// is readable, but the calls themselves do not enter the scheduler. Each
// syscall.Syscall (what net's reads and writes use) wakes Go's sysmon
// thread when it sleeps, and sysmon then polls every 20 µs for a while:
// at 50 ms with three peers that was half of the daemon's wake-ups.
// Sending and receiving a datagram on a non-blocking socket never blocks,
// which is what RawSyscall requires.

// receiver reads one socket: a datagram, its control messages and source.
type receiver struct {
	rc    syscall.RawConn
	raw   [maxPacketLen]byte
	oob   [128]byte
	from  unix.RawSockaddrInet6 // large enough for either family
	iov   unix.Iovec
	msg   unix.Msghdr
	n     int
	errno unix.Errno
	recv  func(fd uintptr) bool // r.recvmsg, bound once: no allocation per read
}

func newReceiver(c *net.UDPConn) (*receiver, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &receiver{rc: rc}
	r.iov.Base = &r.raw[0]
	r.iov.SetLen(len(r.raw))
	r.msg.Name = (*byte)(unsafe.Pointer(&r.from))
	r.msg.Iov = &r.iov
	r.msg.SetIovlen(1)
	r.msg.Control = &r.oob[0]
	r.recv = r.recvmsg
	return r, nil
}

// read waits for the next datagram. A longer one than any BFD packet is
// cut to maxPacketLen, which its length field then refuses.
func (r *receiver) read() (raw, oob []byte, src netip.Addr, err error) {
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
	return r.raw[:min(r.n, len(r.raw))], r.oob[:min(int(r.msg.Controllen), len(r.oob))], src, nil
}

// recvmsg is the RawConn.Read callback: false (wait until readable) when
// nothing is queued.
func (r *receiver) recvmsg(fd uintptr) bool {
	for {
		r.msg.Namelen = unix.SizeofSockaddrInet6
		r.msg.SetControllen(len(r.oob))
		n, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		r.n, r.errno = int(n), e
		return true
	}
}

// sender writes a session's packets to its connected socket.
type sender struct {
	conn  *net.UDPConn
	rc    syscall.RawConn
	buf   [maxPacketLen]byte
	out   []byte
	errno unix.Errno
	send  func(fd uintptr) bool // s.write1, bound once
}

func newSender(c *net.UDPConn) (*sender, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &sender{conn: c, rc: rc}
	s.send = s.write1
	return s, nil
}

// write sends b. A full send buffer (EAGAIN) loses the packet, as the
// wire may.
func (s *sender) write(b []byte) error {
	s.out, s.errno = b, 0
	if err := s.rc.Write(s.send); err != nil {
		return err
	}
	if s.errno != 0 {
		return s.errno
	}
	return nil
}

func (s *sender) write1(fd uintptr) bool {
	for {
		_, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(s.out))), uintptr(len(s.out)))
		if e != unix.EINTR {
			s.errno = e
			return true
		}
	}
}
