package quietio

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SendMsg sends one datagram b with the control messages oob (already
// marshalled) to to (port 0 for a raw IP socket), by one sendmsg(2) on the
// socket behind rc; it waits while the socket's buffer is full.
func SendMsg(rc syscall.RawConn, b, oob []byte, to netip.AddrPort) error {
	var sa4 unix.RawSockaddrInet4
	var sa6 unix.RawSockaddrInet6
	var msg unix.Msghdr
	port := [2]byte{byte(to.Port() >> 8), byte(to.Port())} // network order
	if a := to.Addr(); a.Is4() {
		sa4.Family, sa4.Addr, sa4.Port = unix.AF_INET, a.As4(), *(*uint16)(unsafe.Pointer(&port))
		msg.Name, msg.Namelen = (*byte)(unsafe.Pointer(&sa4)), unix.SizeofSockaddrInet4
	} else {
		sa6.Family, sa6.Addr, sa6.Port = unix.AF_INET6, a.As16(), *(*uint16)(unsafe.Pointer(&port))
		msg.Name, msg.Namelen = (*byte)(unsafe.Pointer(&sa6)), unix.SizeofSockaddrInet6
	}
	var iov unix.Iovec
	if len(b) > 0 {
		iov.Base = &b[0]
		iov.SetLen(len(b))
	}
	msg.Iov = &iov
	msg.SetIovlen(1)
	if len(oob) > 0 {
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
	}
	var errno unix.Errno
	err := rc.Write(func(fd uintptr) bool {
		var ready bool
		_, errno, ready = call(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&msg)), 0)
		return ready
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// IfIndex returns the index of the interface name by one SIOCGIFINDEX
// ioctl on fd (any socket of the network namespace).
func IfIndex(fd int, name string) (int, error) {
	ifr, err := ifreq(fd, name, unix.SIOCGIFINDEX)
	if err != nil {
		return 0, err
	}
	return int(ifr.Uint32()), nil
}

// IfFlags returns the interface flags of name (IFF_UP, IFF_RUNNING, ...)
// by one SIOCGIFFLAGS ioctl on fd, any socket of the network namespace.
func IfFlags(fd int, name string) (uint16, error) {
	ifr, err := ifreq(fd, name, unix.SIOCGIFFLAGS)
	if err != nil {
		return 0, err
	}
	return ifr.Uint16(), nil
}

// ifreq runs one interface ioctl req for name on fd, without the runtime's
// syscall bookkeeping (it does not block), and returns its answer.
func ifreq(fd int, name string, req uintptr) (*unix.Ifreq, error) {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return nil, err
	}
	if _, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(ifr))); e != 0 {
		return nil, e
	}
	return ifr, nil
}
