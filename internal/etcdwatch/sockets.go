package etcdwatch

import (
	"net/netip"
	"time"
)

// TCP states, as sock_diag reports them (include/net/tcp_states.h).
const (
	stateEstablished = 1
	stateCloseWait   = 8
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
	// family and id: the socket as the kernel named it (struct
	// inet_diag_sockid, its cookie included), to ask for it again alone
	// (diagSocket.lookup).
	family uint8
	id     [diagIDLen]byte
}

// key names a connection across two looks.
type key struct{ local, remote netip.AddrPort }

func (s sock) key() key { return key{s.local, s.remote} }
