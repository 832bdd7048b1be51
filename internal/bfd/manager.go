package bfd

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"
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

// Manager runs one session per peer.
type Manager struct {
	cfg      Config
	log      *slog.Logger
	onChange func(Change)
	peers    []*peer
	byDisc   map[uint32]*peer
	byAddr   map[netip.Addr]*peer
	conns    []*net.UDPConn
	drops    Drops
	wg       sync.WaitGroup
	stopOnce sync.Once
}

type rxMsg struct {
	p   Packet
	raw [maxPacketLen]byte
	n   int
	at  time.Time
}

type peer struct {
	addr    netip.Addr
	s       *Session
	tx      *net.UDPConn
	port    int
	rx      chan rxMsg
	admin   chan struct{}
	done    chan struct{}
	buf     [maxPacketLen]byte
	scratch [maxPacketLen]byte

	mu     sync.Mutex
	status SessionStatus
}

// NewManager opens the sockets for sessions with peers; onChange sees every
// state change, from the session's goroutine (it must not block).
func NewManager(cfg Config, peers []netip.Addr, onChange func(Change), log *slog.Logger) (*Manager, error) {
	m := &Manager{cfg: cfg, log: log, onChange: onChange, byDisc: map[uint32]*peer{}, byAddr: map[netip.Addr]*peer{}}
	seed := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x6266_64))
	for _, a := range peers {
		tx, port, err := dial(a, seed)
		if err != nil {
			m.close()
			return nil, err
		}
		disc := seed.Uint32()
		for disc == 0 || m.byDisc[disc] != nil {
			disc = seed.Uint32()
		}
		p := &peer{addr: a, tx: tx, port: port, rx: make(chan rxMsg, 8), admin: make(chan struct{}), done: make(chan struct{}),
			s: NewSession(cfg, disc, rand.New(rand.NewPCG(seed.Uint64(), seed.Uint64())), time.Now())}
		p.status = SessionStatus{Peer: a, State: Down, SrcPort: port, Since: time.Now()}
		m.peers = append(m.peers, p)
		m.byDisc[disc], m.byAddr[a] = p, p
	}
	for _, v6 := range []bool{false, true} {
		if !m.hasFamily(v6) {
			continue
		}
		c, err := listen(v6)
		if err != nil {
			m.close()
			return nil, err
		}
		m.conns = append(m.conns, c)
	}
	return m, nil
}

func (m *Manager) hasFamily(v6 bool) bool {
	for _, p := range m.peers {
		if p.addr.Is6() == v6 {
			return true
		}
	}
	return false
}

// Start runs the receivers and one goroutine per session until Shutdown.
func (m *Manager) Start() {
	for _, c := range m.conns {
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.receive(c) }()
	}
	for _, p := range m.peers {
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.run(p) }()
	}
}

// Shutdown takes every session AdminDown (diag 7), sends the AdminDown
// packets so peers drop the session (and routers our routes) at once, then
// closes everything. It may be called more than once.
func (m *Manager) Shutdown() {
	m.stopOnce.Do(func() {
		for _, p := range m.peers {
			close(p.admin)
		}
		for _, p := range m.peers {
			<-p.done
		}
		m.close()
		m.wg.Wait()
	})
}

func (m *Manager) close() {
	for _, c := range m.conns {
		c.Close()
	}
	for _, p := range m.peers {
		p.tx.Close()
	}
}

// receive reads one family's socket: checks the TTL, decodes, finds the
// session (RFC 5880 section 6.8.6 steps 7-8) and hands the packet to it.
func (m *Manager) receive(c *net.UDPConn) {
	var msg rxMsg
	var oob [128]byte
	for {
		n, oobn, _, from, err := c.ReadMsgUDPAddrPort(msg.raw[:], oob[:])
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			m.log.Warn("Receiving BFD packet failed", "error", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		msg.n, msg.at = n, time.Now()
		if ttlFrom(oob[:oobn]) != TTL {
			m.drops.Add(DropTTL) // RFC 5881 section 5: not from a directly connected peer
			continue
		}
		if err := msg.p.Decode(msg.raw[:n]); err != nil {
			m.dropped(err)
			continue
		}
		p, err := m.lookup(&msg.p, from.Addr().Unmap())
		if err != nil {
			m.dropped(err)
			continue
		}
		select {
		case p.rx <- msg:
		default: // the session is behind: a lost packet, as on the wire
		}
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

// run is the session's goroutine: it owns the Session.
func (m *Manager) run(p *peer) {
	defer close(p.done)
	tx, detect := time.NewTimer(0), time.NewTimer(time.Hour)
	defer tx.Stop()
	defer detect.Stop()
	admin := p.admin
	for {
		prev := p.s.State()
		select {
		case <-admin:
			p.s.SetAdminDown(time.Now())
			m.report(p, prev)
			for i := range adminDownPackets {
				if i > 0 {
					time.Sleep(adminDownGap)
				}
				m.send(p, time.Now())
			}
			return
		case msg := <-p.rx:
			if _, err := p.s.Receive(&msg.p, msg.raw[:msg.n], p.scratch[:], msg.at); err != nil {
				m.dropped(err)
			}
			if p.s.FinalPending() {
				m.send(p, time.Now()) // answer a Poll at once (section 6.5)
			}
		case <-tx.C:
			m.send(p, time.Now())
		case <-detect.C:
			p.s.Expire(time.Now())
		}
		m.report(p, prev)
		tx.Reset(time.Until(p.s.NextTx()))
		if d := p.s.DetectDeadline(); d.IsZero() {
			detect.Stop()
		} else {
			detect.Reset(time.Until(d))
		}
	}
}

func (m *Manager) send(p *peer, now time.Time) {
	var pk Packet
	p.s.Transmit(&pk, now)
	if _, err := p.tx.Write(pk.Encode(p.buf[:], m.cfg.Key)); err != nil && !errors.Is(err, net.ErrClosed) {
		m.log.Debug("Sending BFD packet failed", "peer", p.addr, "error", err)
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
	if m.onChange != nil {
		m.onChange(c)
	}
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
