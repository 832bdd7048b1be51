package etcdwatch

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TCP states, as sock_diag reports them (include/net/tcp_states.h).
const (
	stateEstablished = 1
	stateListen      = 10
)

// sock is what a look needs of one TCP socket.
type sock struct {
	local, remote netip.AddrPort
	state         uint8
	rqueue        uint32 // bytes received and not read yet (a listener: its accept queue)
	received      uint64 // bytes received in all (tcpi_bytes_received)
	// Loss: retransmission timeouts in a row (icsk_retransmits; not the
	// backoff, which zero-window probes raise too), segments retransmitted
	// and not acknowledged yet, segments thought lost, and, counted since
	// the socket began, segments retransmitted and received out of order.
	timeouts            uint8
	retransOut, lostOut uint32
	totalRetrans, ooo   uint32
	lastAck             time.Duration // since the peer last acknowledged anything
	haveInfo            bool          // the kernel gave tcp_info
}

// key names a connection across two looks.
type key struct{ local, remote netip.AddrPort }

func (s sock) key() key { return key{s.local, s.remote} }

// dumpSockets reads every TCP socket of this network namespace, both
// families, with its tcp_info.
func dumpSockets() ([]sock, error) {
	var out []sock
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		rs, err := netlink.SocketDiagTCPInfo(fam)
		if err != nil {
			return nil, fmt.Errorf("sock_diag (family %d): %w", fam, err)
		}
		for _, r := range rs {
			if r.InetDiagMsg == nil {
				continue
			}
			out = append(out, fromDiag(r))
		}
	}
	return out, nil
}

func fromDiag(r *netlink.InetDiagTCPInfoResp) sock {
	m := r.InetDiagMsg
	addr := func(ip []byte, port uint16) netip.AddrPort {
		a, _ := netip.AddrFromSlice(ip)
		return netip.AddrPortFrom(a.Unmap(), port)
	}
	s := sock{
		local:  addr(m.ID.Source, m.ID.SourcePort),
		remote: addr(m.ID.Destination, m.ID.DestinationPort),
		state:  m.State, rqueue: m.RQueue,
	}
	if t := r.TCPInfo; t != nil {
		s.haveInfo = true
		s.received = t.Bytes_received
		s.timeouts = t.Retransmits
		s.lastAck = time.Duration(t.Last_ack_recv) * time.Millisecond
		s.retransOut, s.lostOut = t.Retrans, t.Lost
		s.totalRetrans, s.ooo = t.Total_retrans, t.Rcv_ooopack
	}
	return s
}
