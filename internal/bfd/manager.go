package bfd

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/novaedge/cpvip/internal/quietio"
)

// adminDownPackets is how many AdminDown packets a session sends on
// shutdown, adminDownGap apart: one is enough for the peer, the others cover a loss.
const (
	adminDownPackets = 3
	adminDownGap     = 10 * time.Millisecond
)

// Change is a session state change the Manager reports.
type Change struct {
	Peer       netip.Addr
	State      State
	Prev       State
	Diag       Diag // ours
	RemoteDiag Diag
}

// SessionStatus is a snapshot of a session for /status and metrics.
type SessionStatus struct {
	Peer       netip.Addr
	State      State
	Diag       Diag
	RemoteDiag Diag
	TxInterval time.Duration
	RxInterval time.Duration
	SrcPort    int
	Since      time.Time
}

// Manager runs the sessions with peers. One goroutine per address family
// reads that family's packets and handles each where it reads it (no
// goroutine hand-off); one goroutine with one timer sends and expires for
// every session at the earliest deadline of all (loop.go). Both hold mu
// while they touch a session. Packets go in and out by raw system calls
// (internal/quietio), so the idle runtime is not woken for each.
type Manager struct {
	cfg      Config
	log      *slog.Logger
	notify   *notifier
	peers    []*peer
	byDisc   map[uint32]*peer // read-only once NewManager returns
	byAddr   map[netip.Addr]*peer
	loops    []*loop
	drops    Drops
	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once

	mu      sync.Mutex     // the sessions, timer and timerAt
	timer   *quietio.Timer // a timerfd: one wake-up a deadline, where a runtime timer costs about six
	timerAt time.Time
}

// loop is one family's receive socket.
type loop struct {
	conn *net.UDPConn
	rx   *quietio.Receiver
}

type peer struct {
	addr    netip.Addr
	s       *Session // under Manager.mu
	conn    *net.UDPConn
	tx      *quietio.Sender
	port    int
	buf     [maxPacketLen]byte
	scratch [maxPacketLen]byte

	mu     sync.Mutex
	status SessionStatus
}

// NewManager opens the sockets for sessions with peers; onChange sees every
// state change, in order, on a goroutine of its own (notify.go).
func NewManager(cfg Config, peers []netip.Addr, onChange func(Change), log *slog.Logger) (*Manager, error) {
	m := &Manager{cfg: cfg, log: log, notify: newNotifier(onChange), byDisc: map[uint32]*peer{}, byAddr: map[netip.Addr]*peer{},
		stop: make(chan struct{})}
	seed := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x6266_64))
	for _, a := range peers {
		c, port, err := dial(a, seed)
		if err != nil {
			m.close()
			return nil, err
		}
		tx, err := quietio.NewSender(c)
		if err != nil {
			c.Close()
			m.close()
			return nil, err
		}
		disc := seed.Uint32()
		for disc == 0 || m.byDisc[disc] != nil {
			disc = seed.Uint32()
		}
		p := newPeer(a, c, tx, port, NewSession(cfg, disc, rand.New(rand.NewPCG(seed.Uint64(), seed.Uint64())), time.Now()))
		m.peers = append(m.peers, p)
		m.byDisc[disc], m.byAddr[a] = p, p
	}
	for _, v6 := range []bool{false, true} {
		if !slices.ContainsFunc(m.peers, func(p *peer) bool { return p.addr.Is6() == v6 }) {
			continue
		}
		c, err := listen(v6)
		if err != nil {
			m.close()
			return nil, err
		}
		rx, err := quietio.NewReceiver(c, maxPacketLen)
		if err != nil {
			c.Close()
			m.close()
			return nil, err
		}
		m.loops = append(m.loops, &loop{conn: c, rx: rx})
	}
	return m, nil
}

func newPeer(a netip.Addr, c *net.UDPConn, tx *quietio.Sender, port int, s *Session) *peer {
	return &peer{addr: a, conn: c, tx: tx, port: port, s: s, status: SessionStatus{Peer: a, State: Down, SrcPort: port, Since: time.Now()}}
}

// Start runs the readers and the timer until Shutdown.
func (m *Manager) Start() {
	m.mu.Lock()
	m.timer, m.timerAt = quietio.NewTimer(0), time.Now()
	m.mu.Unlock()
	for _, l := range m.loops {
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.receive(l) }()
	}
	m.wg.Add(2)
	go func() { defer m.wg.Done(); m.tick() }()
	go func() { defer m.wg.Done(); m.notify.run(m.stop) }()
}

// Shutdown takes every session AdminDown (diag 7), sends the AdminDown
// packets so peers drop the session (and routers our routes) at once, then
// closes everything. It may be called more than once.
func (m *Manager) Shutdown() {
	m.stopOnce.Do(func() {
		close(m.stop)
		m.mu.Lock()
		m.adminDown()
		m.mu.Unlock()
		m.close()
		m.wg.Wait()
		m.notify.deliver() // the AdminDown changes
	})
}

func (m *Manager) close() {
	if m.timer != nil { // nil before Start (NewManager's failures close too)
		m.timer.Close()
	}
	for _, l := range m.loops {
		l.conn.Close()
	}
	for _, p := range m.peers {
		p.conn.Close()
	}
}

func (m *Manager) lookup(pk *Packet, src netip.Addr) (*peer, error) {
	if pk.YourDisc != 0 {
		p := m.byDisc[pk.YourDisc]
		if p == nil || p.addr != src {
			return nil, DropYourDisc
		}
		return p, nil
	}
	if pk.State != Down && pk.State != AdminDown {
		return nil, DropState
	}
	if p := m.byAddr[src]; p != nil {
		return p, nil
	}
	return nil, DropNoSession
}

func (m *Manager) dropped(err error) {
	var r Reason
	if errors.As(err, &r) {
		m.drops.Add(r)
	}
}

// report updates the status and tells onChange when the state changed.
func (m *Manager) report(p *peer, prev State) {
	state := p.s.State()
	tx, rx := p.s.Negotiated()
	p.mu.Lock()
	timers := state == Up && prev == Up && (p.status.TxInterval != tx || p.status.RxInterval != rx)
	p.status.TxInterval, p.status.RxInterval = tx, rx
	changed := state != prev
	if changed {
		p.status.State, p.status.Diag, p.status.RemoteDiag, p.status.Since = state, p.s.LocalDiag(), p.s.RemoteDiag(), time.Now()
	}
	p.mu.Unlock()
	if timers {
		m.log.Info("BFD session intervals changed", "peer", p.addr, "tx", tx, "rx", rx)
	}
	if !changed {
		return
	}
	c := Change{Peer: p.addr, State: state, Prev: prev, Diag: p.s.LocalDiag(), RemoteDiag: p.s.RemoteDiag()}
	switch {
	case state == Up:
		m.log.Info("BFD session up", "peer", p.addr, "tx", tx, "rx", rx, "source_port", p.port)
	case prev == Up:
		m.log.Warn("BFD session down", "peer", p.addr, "state", state, "diag", c.Diag, "remote_diag", c.RemoteDiag)
	default:
		m.log.Debug("BFD session state changed", "peer", p.addr, "from", prev, "to", state)
	}
	m.notify.add(c)
}

// Sessions returns a snapshot of every session.
func (m *Manager) Sessions() []SessionStatus {
	out := make([]SessionStatus, len(m.peers))
	for i, p := range m.peers {
		p.mu.Lock()
		out[i] = p.status
		p.mu.Unlock()
	}
	return out
}

// Drops returns the dropped packets by reason.
func (m *Manager) Drops() map[Reason]uint64 { return m.drops.Snapshot() }
