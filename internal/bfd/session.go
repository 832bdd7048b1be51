package bfd

import (
	"math/rand/v2"
	"time"
)

// slowTx is the transmit interval we advertise until the session is Up
// (RFC 5880 section 6.8.3: at least one second).
const slowTx = time.Second

// Config are a session's local parameters.
type Config struct {
	DesiredMinTx  time.Duration
	RequiredMinRx time.Duration
	DetectMult    uint8
	Key           *Key // nil: no authentication
}

// Session is one BFD session's state (RFC 5880 section 6.8.1). It reads no
// clock and does not allocate: events carry now; NextTx and DetectDeadline
// say when the driver must call Transmit and Expire.
type Session struct {
	cfg              Config
	state            State
	remoteState      State
	localDisc        uint32
	remoteDisc       uint32
	localDiag        Diag
	remoteDiag       Diag
	desiredTx        time.Duration // advertised bfd.DesiredMinTxInterval
	remoteMinRx      time.Duration
	remoteDesiredTx  time.Duration
	remoteDetectMult uint8
	pollActive       bool
	sendFinal        bool
	nextTx           time.Time
	lastTx           time.Time // the latest Transmit; zero: none yet
	detectAt         time.Time // zero: no detection timer
	lastRx           time.Time
	xmitSeq          uint32
	rcvSeq           uint32
	rcvSeqKnown      bool
	rng              *rand.Rand
}

// NewSession returns a session in Down with local discriminator disc. rng
// supplies the transmit jitter and the first authentication sequence number.
func NewSession(cfg Config, disc uint32, rng *rand.Rand, now time.Time) *Session {
	s := &Session{cfg: cfg, state: Down, remoteState: Down, localDisc: disc, desiredTx: slowTx,
		remoteMinRx: time.Microsecond, rng: rng, xmitSeq: rng.Uint32()}
	s.nextTx = now // send at once
	return s
}

// State returns the session state.
func (s *Session) State() State { return s.state }

// LocalDiag returns our diagnostic; RemoteDiag the peer's last one.
func (s *Session) LocalDiag() Diag  { return s.localDiag }
func (s *Session) RemoteDiag() Diag { return s.remoteDiag }

// NextTx is when Transmit is due.
func (s *Session) NextTx() time.Time { return s.nextTx }

// DetectDeadline is when Expire is due; zero when no detection timer runs.
func (s *Session) DetectDeadline() time.Time { return s.detectAt }

// TxInterval is the current transmit interval before jitter: the larger of
// our desired minimum and the peer's required minimum (section 6.8.7).
func (s *Session) TxInterval() time.Duration { return max(s.desiredTx, s.remoteMinRx) }

// DetectionTime is the peer's detect multiplier times the larger of our
// required minimum receive interval and its desired transmit interval (6.8.4).
func (s *Session) DetectionTime() time.Duration {
	return time.Duration(s.remoteDetectMult) * max(s.cfg.RequiredMinRx, s.remoteDesiredTx)
}

// jittered reduces d by 0-25 % (10-25 % when the detect multiplier is 1), section 6.8.7.
func (s *Session) jittered(d time.Duration) time.Duration {
	low, span := 0.75, 0.25
	if s.cfg.DetectMult == 1 {
		span = 0.15
	}
	return time.Duration(float64(d) * (low + span*s.rng.Float64()))
}

// EarliestTx is the earliest time the next packet may go: the latest one's
// time plus the shortest interval the jitter allows (75 % of the interval,
// section 6.8.7). A packet sent between it and NextTx is one whose jitter
// drew that interval: a driver may send it with another session's, so that
// one wake-up serves both. Zero before the first packet.
func (s *Session) EarliestTx() time.Time {
	if s.lastTx.IsZero() {
		return time.Time{}
	}
	return s.lastTx.Add(time.Duration(float64(s.TxInterval()) * 0.75))
}

// Receive processes a decoded packet for this session (RFC 5880 section
// 6.8.6, after the session lookup). raw is the packet as received, scratch a
// buffer of at least maxPacketLen bytes for authentication. It returns whether
// the state changed, and a Reason when the packet is dropped.
func (s *Session) Receive(p *Packet, raw, scratch []byte, now time.Time) (bool, error) {
	if err := s.authenticate(p, raw, scratch, now); err != nil {
		return false, err
	}
	s.lastRx = now
	s.remoteDisc, s.remoteState, s.remoteDiag = p.MyDisc, p.State, p.Diag
	s.remoteDetectMult = p.DetectMult
	s.remoteDesiredTx = time.Duration(p.DesiredMinTx) * time.Microsecond
	oldTx := s.TxInterval()
	s.remoteMinRx = time.Duration(p.RequiredMinRx) * time.Microsecond
	if p.Final && s.pollActive {
		s.pollActive = false
	}
	if p.Poll {
		s.sendFinal = true // answered at once by the driver
	}
	if s.state == AdminDown {
		return false, nil
	}
	s.detectAt = now.Add(s.DetectionTime())
	changed := s.transition(p.State, now)
	if s.TxInterval() < oldTx {
		s.rescheduleTx(now) // a shrinking interval takes effect now, not after the old one
	}
	return changed, nil
}

// transition applies the state machine of section 6.8.6 for a received state.
func (s *Session) transition(remote State, now time.Time) bool {
	prev := s.state
	switch {
	case remote == AdminDown:
		if s.state != Down {
			s.goDown(DiagNeighborDown)
		}
	case s.state == Down && remote == Down:
		s.state = Init
	case s.state == Down && remote == Init, s.state == Init && (remote == Init || remote == Up):
		s.goUp(now)
	case s.state == Up && remote == Down:
		s.goDown(DiagNeighborDown)
	}
	return s.state != prev
}

// goUp switches to the configured transmit interval with a Poll Sequence
// (section 6.8.3), rescheduling at once when that is faster.
func (s *Session) goUp(now time.Time) {
	s.state, s.localDiag = Up, DiagNone
	if s.desiredTx != s.cfg.DesiredMinTx {
		s.desiredTx, s.pollActive = s.cfg.DesiredMinTx, true
	}
	s.rescheduleTx(now)
}

func (s *Session) goDown(d Diag) {
	s.state, s.localDiag = Down, d
	s.desiredTx, s.pollActive = slowTx, false
}

func (s *Session) rescheduleTx(now time.Time) {
	if next := now.Add(s.jittered(s.TxInterval())); next.Before(s.nextTx) {
		s.nextTx = next
	}
}

// authenticate applies the authentication checks of section 6.8.6 and the
// sequence number window of sections 6.7.3/6.7.4.
func (s *Session) authenticate(p *Packet, raw, scratch []byte, now time.Time) error {
	key := s.cfg.Key
	if (key != nil) != p.Auth {
		return DropAuth
	}
	if key == nil {
		return nil
	}
	if !p.Authenticate(raw, key, scratch) {
		return DropAuthFailed
	}
	if key.Type == AuthSimple {
		return nil
	}
	if s.rcvSeqKnown && now.Sub(s.lastRx) > 2*s.DetectionTime() {
		s.rcvSeqKnown = false // section 6.8.1: forget after twice the detection time
	}
	if s.rcvSeqKnown {
		window := 3 * uint32(max(s.remoteDetectMult, p.DetectMult))
		d := p.AuthSeq - s.rcvSeq // modulo 2^32
		if d > window || (key.Type == AuthMeticulousSHA1 && d == 0) {
			return DropAuthFailed
		}
	}
	s.rcvSeq, s.rcvSeqKnown = p.AuthSeq, true
	return nil
}

// Expire handles the detection timer at now: Init or Up without a packet
// for the detection time goes Down (diag 1) and forgets the peer.
func (s *Session) Expire(now time.Time) bool {
	if s.detectAt.IsZero() || now.Before(s.detectAt) {
		return false
	}
	s.detectAt = time.Time{}
	s.remoteDisc = 0
	if s.state == Init || s.state == Up {
		s.goDown(DiagTimeExpired)
		return true
	}
	return false
}

// Transmit fills p with the packet to send now and schedules the next one.
// It also serves the immediate Final answer to a Poll.
func (s *Session) Transmit(p *Packet, now time.Time) {
	*p = Packet{Diag: s.localDiag, State: s.state, Poll: s.pollActive && !s.sendFinal, Final: s.sendFinal,
		DetectMult: s.cfg.DetectMult, MyDisc: s.localDisc, YourDisc: s.remoteDisc,
		DesiredMinTx: uint32(s.desiredTx / time.Microsecond), RequiredMinRx: uint32(s.cfg.RequiredMinRx / time.Microsecond)}
	if s.cfg.Key != nil && s.cfg.Key.Type != AuthSimple {
		s.xmitSeq++
		p.AuthSeq = s.xmitSeq
	}
	s.sendFinal = false
	s.lastTx = now
	s.nextTx = now.Add(s.jittered(s.TxInterval()))
}

// FinalPending reports whether a Poll waits for its Final answer.
func (s *Session) FinalPending() bool { return s.sendFinal }

// SetAdminDown takes the session to AdminDown with diag 7 (section 6.8.16):
// the next packets tell the peer, which takes the session Down at once.
func (s *Session) SetAdminDown(now time.Time) {
	s.state, s.localDiag = AdminDown, DiagAdminDown
	s.detectAt = time.Time{}
	s.nextTx = now
}

// Negotiated returns the intervals in force: ours to send, and the one we
// expect the peer to send at (the detection time divided by its multiplier).
func (s *Session) Negotiated() (tx, rx time.Duration) {
	return s.TxInterval(), max(s.cfg.RequiredMinRx, s.remoteDesiredTx)
}
