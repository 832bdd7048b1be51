package bfd

import (
	"errors"
	"net"
	"net/netip"
	"time"
)

// receive is one family's reader: each packet is handled where it is read.
func (m *Manager) receive(l *loop) {
	for {
		raw, oob, src, err := l.rx.Read()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			m.log.Warn("Receiving BFD packet failed", "error", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		m.mu.Lock()
		m.handle(raw, oob, src, time.Now())
		m.mu.Unlock()
	}
}

// handle checks the TTL, decodes, finds the session (RFC 5880 section
// 6.8.6 steps 7-8) and runs it; a Poll is answered at once (section 6.5).
// It brings the timer forward when the session's next deadline moved up.
func (m *Manager) handle(raw, oob []byte, src netip.Addr, now time.Time) {
	if ttlFrom(oob) != TTL {
		m.drops.Add(DropTTL) // RFC 5881 section 5: not from a directly connected peer
		return
	}
	var pk Packet
	if err := pk.Decode(raw); err != nil {
		m.dropped(err)
		return
	}
	p, err := m.lookup(&pk, src)
	if err != nil {
		m.dropped(err)
		return
	}
	prev := p.s.State()
	if _, err := p.s.Receive(&pk, raw, p.scratch[:], now); err != nil {
		m.dropped(err)
	}
	if p.s.FinalPending() {
		m.send(p, now)
	}
	m.report(p, prev)
	if at := deadline(p.s); m.timer != nil && at.Before(m.timerAt) {
		m.timerAt = at
		m.timer.Reset(at.Sub(now))
	}
}

// tick is the one timer of all sessions: at the earliest deadline it sends
// and expires what is due, then waits for the next.
func (m *Manager) tick() {
	for {
		select {
		case <-m.stop:
			return
		case <-m.timer.C(): // or a tick armed before the latest Reset: due acts only on what is due
		}
		m.mu.Lock()
		now := time.Now()
		m.due(now)
		m.timerAt = m.next()
		m.timer.Reset(m.timerAt.Sub(now))
		m.mu.Unlock()
	}
}

// due expires and transmits for every session whose time has come. When
// one transmits, so does every other whose jitter allows it now
// (Session.EarliestTx): the sessions' packets go together, one wake-up for
// all, each interval still within the jitter's range.
func (m *Manager) due(now time.Time) {
	sending := false
	for _, p := range m.peers {
		sending = sending || !now.Before(p.s.NextTx())
	}
	for _, p := range m.peers {
		prev := p.s.State()
		p.s.Expire(now)
		early := sending && !p.s.EarliestTx().IsZero() && !now.Before(p.s.EarliestTx())
		if early || !now.Before(p.s.NextTx()) {
			m.send(p, now)
		}
		m.report(p, prev)
	}
}

// next is the earliest transmit or detection deadline of all sessions.
func (m *Manager) next() time.Time {
	var at time.Time
	for _, p := range m.peers {
		if t := deadline(p.s); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at
}

// deadline is when s needs its driver next: its transmit time, or its
// detection time when that comes first. A packet can bring either forward
// (a shorter interval, or a detection time shorter than our transmit
// interval when the peer sends faster than we do).
func deadline(s *Session) time.Time {
	at := s.NextTx()
	if d := s.DetectDeadline(); !d.IsZero() && d.Before(at) {
		at = d
	}
	return at
}

// adminDown takes every session AdminDown and sends each peer
// adminDownPackets packets, adminDownGap apart.
func (m *Manager) adminDown() {
	now := time.Now()
	for _, p := range m.peers {
		prev := p.s.State()
		p.s.SetAdminDown(now)
		m.report(p, prev)
	}
	for i := range adminDownPackets {
		if i > 0 {
			time.Sleep(adminDownGap)
		}
		for _, p := range m.peers {
			m.send(p, time.Now())
		}
	}
}

func (m *Manager) send(p *peer, now time.Time) {
	var pk Packet
	p.s.Transmit(&pk, now)
	if err := p.tx.Write(pk.Encode(p.buf[:], m.cfg.Key)); err != nil && !errors.Is(err, net.ErrClosed) {
		m.log.Debug("Sending BFD packet failed", "peer", p.addr, "error", err)
	}
}
