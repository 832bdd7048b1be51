package vrrp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"

	"github.com/novaedge/cpvip/internal/quietio"
	"github.com/vishvananda/netlink"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// Conn sends and receives the advertisements of one address family on one
// interface: a raw IP socket for protocol 112 bound to the interface, the
// multicast group joined, or unicast to peers. When the interface is deleted
// and created again, Refresh opens a socket on the new one.
type Conn struct {
	ifname  string
	v6      bool
	peers   []netip.Addr    // unicast mode when not empty
	exclude []netip.Addr    // the VIPs: never our primary address
	nl      *netlink.Handle // for Primary: one goroutine at a time (Instance.Run's wait for it, then its loop)
	ctl     int             // a socket for SIOCGIFINDEX, for Refresh

	mu     sync.Mutex
	s      *socket
	closed bool
}

// socket is one open raw socket on one interface instance.
type socket struct {
	ifi *net.Interface
	p4  *ipv4.PacketConn
	p6  *ipv6.PacketConn
	rc  syscall.RawConn   // for Send's raw sendmsg (quietio)
	rx  *quietio.Receiver // Receive's reads (quietio)
	buf []byte
}

// Listen opens the socket for ifname; v6 selects IPv6. It needs CAP_NET_RAW.
func Listen(ifname string, v6 bool, peers, exclude []netip.Addr) (*Conn, error) {
	nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("opening netlink: %w", err)
	}
	// For the interface ioctls: they answer for the socket's network
	// namespace, whatever the family. AF_INET, not glibc's AF_UNIX: the
	// unit allows no local sockets (RestrictAddressFamilies).
	ctl, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		nl.Close()
		return nil, fmt.Errorf("opening a control socket: %w", err)
	}
	c := &Conn{ifname: ifname, v6: v6, peers: peers, exclude: exclude, nl: nl, ctl: ctl}
	s, err := c.open()
	if err != nil {
		nl.Close()
		unix.Close(ctl)
		return nil, err
	}
	c.s = s
	return c, nil
}

// ErrGone says the interface does not exist (any more).
var ErrGone = errors.New("the interface does not exist")

// Refresh reopens the socket if the interface was deleted and created again
// (its index changed) and says so; a single by-name lookup otherwise.
func (c *Conn) Refresh() (bool, error) {
	index, err := c.index()
	if errors.Is(err, unix.ENODEV) {
		return false, fmt.Errorf("%s: %w", c.ifname, ErrGone)
	}
	if err != nil {
		return false, fmt.Errorf("finding interface %s: %w", c.ifname, err)
	}
	c.mu.Lock()
	same := c.s.ifi.Index == index
	c.mu.Unlock()
	if same {
		return false, nil
	}
	s, err := c.open()
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	old := c.s
	c.s = s
	c.mu.Unlock()
	old.close() // a Receive blocked on it goes on with the new socket
	return true, nil
}

// Carrier reports whether the interface is up with carrier (IFF_UP and
// IFF_RUNNING: operational state up), by one ioctl.
func (c *Conn) Carrier() (bool, error) {
	flags, err := quietio.IfFlags(c.ctl, c.ifname)
	if err != nil {
		return false, fmt.Errorf("reading the flags of %s: %w", c.ifname, err)
	}
	const want = unix.IFF_UP | unix.IFF_RUNNING
	return flags&want == want, nil
}

// index is the interface's index now, by one ioctl: a netlink lookup
// builds and parses a whole link message, and was an eighth of the idle
// daemon's CPU time when run every second.
func (c *Conn) index() (int, error) {
	return quietio.IfIndex(c.ctl, c.ifname)
}

func (c *Conn) current() (*socket, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s, c.closed
}

func (c *Conn) open() (*socket, error) {
	ifname, v6 := c.ifname, c.v6
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("finding interface %s: %w", ifname, err)
	}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.BindToDevice(int(fd), ifname) }); err != nil {
			return err
		}
		return serr
	}}
	network, any := "ip4:112", "0.0.0.0"
	if v6 {
		network, any = "ip6:112", "::"
	}
	pc, err := lc.ListenPacket(context.Background(), network, any)
	if err != nil {
		return nil, fmt.Errorf("opening VRRP socket on %s: %w", ifname, err)
	}
	s := &socket{ifi: ifi, buf: make([]byte, 0, 64)}
	ipc := pc.(*net.IPConn)
	if s.rc, err = ipc.SyscallConn(); err == nil {
		s.rx, err = quietio.NewReceiver(ipc, maxDatagram)
	}
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("opening VRRP socket on %s: %w", ifname, err)
	}
	if err := c.setup(s, pc); err != nil {
		pc.Close()
		return nil, fmt.Errorf("setting up VRRP socket on %s: %w", ifname, err)
	}
	return s, nil
}

func (c *Conn) setup(s *socket, pc net.PacketConn) error {
	if c.v6 {
		s.p6 = ipv6.NewPacketConn(pc)
		p := s.p6
		return errors.Join(p.SetMulticastHopLimit(TTL), p.SetHopLimit(TTL), p.SetMulticastLoopback(false),
			optional(p.SetMulticastInterface(s.ifi)), p.SetControlMessage(ipv6.FlagHopLimit|ipv6.FlagDst|ipv6.FlagInterface, true),
			c.join(func() error {
				return orOlder(p.JoinGroup(s.ifi, &net.IPAddr{IP: GroupV6.AsSlice()}), s.rc, func(fd int) error {
					return unix.SetsockoptIPv6Mreq(fd, unix.IPPROTO_IPV6, unix.IPV6_ADD_MEMBERSHIP,
						&unix.IPv6Mreq{Multiaddr: GroupV6.As16(), Interface: uint32(s.ifi.Index)})
				})
			}))
	}
	s.p4 = ipv4.NewPacketConn(pc)
	p := s.p4
	return errors.Join(p.SetMulticastTTL(TTL), p.SetTTL(TTL), p.SetMulticastLoopback(false),
		optional(p.SetMulticastInterface(s.ifi)), p.SetControlMessage(ipv4.FlagTTL|ipv4.FlagDst|ipv4.FlagInterface, true),
		c.join(func() error {
			return orOlder(p.JoinGroup(s.ifi, &net.IPAddr{IP: GroupV4.AsSlice()}), s.rc, func(fd int) error {
				// struct ip_mreq names the interface by an address of its
				// (qemu-user mistranslates ip_mreqn's index).
				local, err := firstIPv4(s.ifi)
				if err != nil {
					return err
				}
				return unix.SetsockoptIPMreq(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP,
					&unix.IPMreq{Multiaddr: GroupV4.As4(), Interface: local.As4()})
			})
		}))
}

// firstIPv4 is an IPv4 address of ifi.
func firstIPv4(ifi *net.Interface) (netip.Addr, error) {
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() {
				return ip.Unmap(), nil
			}
		}
	}
	return netip.Addr{}, fmt.Errorf("%s has no IPv4 address to join %s on", ifi.Name, GroupV4)
}

// optional ignores an option the system does not know (ENOPROTOOPT): the
// multicast interface, which the socket's binding to the device sets anyway.
// qemu-user, which runs our arm64 tests, lacks IP_MULTICAST_IF.
func optional(err error) error {
	if errors.Is(err, unix.ENOPROTOOPT) {
		return nil
	}
	return err
}

// orOlder joins the group with the older IP_ADD_MEMBERSHIP /
// IPV6_ADD_MEMBERSHIP option when MCAST_JOIN_GROUP is unknown (qemu-user);
// both join alike on Linux.
func orOlder(err error, rc syscall.RawConn, older func(fd int) error) error {
	if !errors.Is(err, unix.ENOPROTOOPT) {
		return err
	}
	var oerr error
	if err := rc.Control(func(fd uintptr) { oerr = older(int(fd)) }); err != nil {
		return err
	}
	return oerr
}

func (s *socket) close() error {
	if s.p6 != nil {
		return s.p6.Close()
	}
	return s.p4.Close()
}

func (c *Conn) join(f func() error) error {
	if len(c.peers) > 0 {
		return nil
	}
	return f()
}

// Primary returns our primary address on the interface: the first IPv4
// address that is not a VIP, or the first link-local IPv6 address that has
// finished duplicate address detection.
func (c *Conn) Primary() (netip.Addr, error) {
	link, err := c.nl.LinkByName(c.ifname)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("finding interface %s: %w", c.ifname, err)
	}
	family := netlink.FAMILY_V4
	if c.v6 {
		family = netlink.FAMILY_V6
	}
	addrs, err := c.nl.AddrList(link, family)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("listing addresses of %s: %w", c.ifname, err)
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok || slices.Contains(c.exclude, ip.Unmap()) || a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
			continue
		}
		if ip = ip.Unmap(); (c.v6 && ip.IsLinkLocalUnicast()) || (!c.v6 && ip.Is4()) {
			return ip, nil
		}
	}
	kind := "IPv4 address"
	if c.v6 {
		kind = "usable link-local IPv6 address"
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no %s of its own", c.ifname, kind)
}

// Send sends a from src to the group, or to every unicast peer.
func (c *Conn) Send(a *Advertisement, src netip.Addr) error {
	s, _ := c.current()
	dsts := c.peers
	if len(dsts) == 0 {
		dsts = []netip.Addr{GroupV4}
		if c.v6 {
			dsts = []netip.Addr{GroupV6}
		}
	}
	var errs []error
	for _, dst := range dsts {
		s.buf = a.Marshal(s.buf[:0], src, dst)
		var oob []byte
		if c.v6 {
			oob = (&ipv6.ControlMessage{HopLimit: TTL, Src: src.AsSlice(), IfIndex: s.ifi.Index}).Marshal()
		} else {
			oob = (&ipv4.ControlMessage{Src: src.AsSlice(), IfIndex: s.ifi.Index}).Marshal()
		}
		if err := quietio.SendMsg(s.rc, s.buf, oob, netip.AddrPortFrom(dst, 0)); err != nil {
			errs = append(errs, fmt.Errorf("sending to %s: %w", dst, err))
		}
	}
	return errors.Join(errs...)
}

// Pending says whether a packet may wait for Receive: queued on the
// socket, or taken by Receive, which was not called again since.
func (c *Conn) Pending() bool {
	s, closed := c.current()
	return !closed && s.rx.Pending()
}

// Receive reads the next packet and checks it: TTL 255, the
// advertisement itself, unicast peers. A dropped packet returns a Reason.
// It goes on with the new socket when Refresh replaced the one it read.
func (c *Conn) Receive() (Advertisement, netip.Addr, error) {
	for {
		s, _ := c.current()
		a, src, err := c.receive(s)
		if errors.Is(err, net.ErrClosed) {
			if now, closed := c.current(); !closed && now != s {
				continue
			}
		}
		return a, src, err
	}
}

func (c *Conn) receive(s *socket) (Advertisement, netip.Addr, error) {
	raw, oob, src, err := s.rx.Read()
	if err != nil {
		return Advertisement{}, netip.Addr{}, err
	}
	var ttl int
	var dst netip.Addr
	if c.v6 {
		var cm ipv6.ControlMessage
		if cm.Parse(oob) == nil {
			ttl, dst = cm.HopLimit, addrOf(cm.Dst)
		}
	} else {
		var cm ipv4.ControlMessage
		if cm.Parse(oob) == nil {
			ttl, dst = cm.TTL, addrOf(cm.Dst)
		}
		if raw, err = stripIPv4Header(raw); err != nil {
			return Advertisement{}, src, err
		}
	}
	if ttl != TTL {
		return Advertisement{}, src, DropTTL
	}
	if len(c.peers) > 0 && !slices.Contains(c.peers, src) {
		return Advertisement{}, src, DropNotPeer
	}
	a, err := Parse(raw, src, dst)
	return a, src, err
}

// maxDatagram is the longest packet read: an IPv4 header with options
// and an advertisement with 255 IPv6 addresses fit.
const maxDatagram = 60 + 8 + 255*16

// stripIPv4Header returns the payload of an IPv4 packet as a raw IPv4
// socket reads it (header included, unlike IPv6's).
func stripIPv4Header(b []byte) ([]byte, error) {
	if len(b) < 20 || b[0]>>4 != 4 {
		return nil, DropShort
	}
	hl := int(b[0]&0x0f) * 4
	if hl < 20 || hl > len(b) {
		return nil, DropShort
	}
	return b[hl:], nil
}

// Close closes the socket; a blocked Receive returns.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	s := c.s
	c.mu.Unlock()
	c.nl.Close()
	unix.Close(c.ctl)
	return s.close()
}

func addrOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}
