package bfd

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Unix(1_000_000, 0)

type peerPair struct {
	a, b    *Session
	buf     [maxPacketLen]byte
	scratch [maxPacketLen]byte
}

func newPair(cfg Config) *peerPair {
	return &peerPair{
		a: NewSession(cfg, 0x1111, rand.New(rand.NewPCG(1, 1)), t0),
		b: NewSession(cfg, 0x2222, rand.New(rand.NewPCG(2, 2)), t0),
	}
}

// send transmits one packet from s to d through the codec and returns d's verdict.
func (pp *peerPair) send(s, d *Session, now time.Time) error {
	var p Packet
	s.Transmit(&p, now)
	raw := p.Encode(pp.buf[:], s.cfg.Key)
	var q Packet
	if err := q.Decode(raw); err != nil {
		return err
	}
	_, err := d.Receive(&q, raw, pp.scratch[:], now)
	return err
}

var fast = Config{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 3}

func TestHandshakeSlowStartAndPoll(t *testing.T) {
	pp := newPair(fast)
	now := t0
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(pp.send(pp.a, pp.b, now)) // a Down -> b: Down->Init
	if pp.b.State() != Init {
		t.Fatalf("b %v, want init", pp.b.State())
	}
	if got := pp.a.TxInterval(); got != time.Second {
		t.Errorf("interval before Up %s, want the 1 s slow start", got)
	}
	must(pp.send(pp.b, pp.a, now)) // b Init -> a: Down->Up
	if pp.a.State() != Up {
		t.Fatalf("a %v, want up", pp.a.State())
	}
	// a went Up: it advertises 50 ms with a Poll, and rescheduled at once.
	if pp.a.NextTx().Sub(now) > 50*time.Millisecond {
		t.Errorf("a's next packet in %s: a shrinking interval must take effect at once", pp.a.NextTx().Sub(now))
	}
	var p Packet
	pp.a.Transmit(&p, now)
	if !p.Poll || p.State != Up || p.DesiredMinTx != 50000 {
		t.Fatalf("a's packet after Up: %+v", p)
	}
	raw := p.Encode(pp.buf[:], nil)
	var q Packet
	must(q.Decode(raw))
	if _, err := pp.b.Receive(&q, raw, pp.scratch[:], now); err != nil || pp.b.State() != Up || !pp.b.FinalPending() {
		t.Fatalf("b after a's Poll: %v %v final=%v", err, pp.b.State(), pp.b.FinalPending())
	}
	pp.b.Transmit(&p, now) // b answers with F at once
	if !p.Final || p.Poll {
		t.Fatalf("b's answer %+v: want F without P", p)
	}
	raw = p.Encode(pp.buf[:], nil)
	must(q.Decode(raw))
	if _, err := pp.a.Receive(&q, raw, pp.scratch[:], now); err != nil || pp.a.pollActive {
		t.Fatalf("a's poll not terminated by the Final: %v", err)
	}
	// Both Up at 50 ms: detection time 3 x 50 ms.
	for _, s := range []*Session{pp.a, pp.b} {
		if s.TxInterval() != 50*time.Millisecond || s.DetectionTime() != 150*time.Millisecond {
			t.Errorf("tx %s detect %s, want 50 ms and 150 ms", s.TxInterval(), s.DetectionTime())
		}
	}
}

func up(t *testing.T, cfg Config) *peerPair {
	t.Helper()
	pp := newPair(cfg)
	for _, step := range [][2]*Session{{pp.a, pp.b}, {pp.b, pp.a}, {pp.a, pp.b}, {pp.b, pp.a}} {
		if err := pp.send(step[0], step[1], t0); err != nil {
			t.Fatal(err)
		}
	}
	if pp.a.State() != Up || pp.b.State() != Up {
		t.Fatalf("states %v %v", pp.a.State(), pp.b.State())
	}
	return pp
}

func TestDetectionTimeAndAdminDown(t *testing.T) {
	pp := up(t, fast)
	deadline := pp.a.DetectDeadline()
	if deadline.Sub(t0) != 150*time.Millisecond {
		t.Fatalf("detection deadline %s after the last packet", deadline.Sub(t0))
	}
	if pp.a.Expire(deadline.Add(-time.Nanosecond)) {
		t.Fatal("expired early")
	}
	if !pp.a.Expire(deadline) || pp.a.State() != Down || pp.a.LocalDiag() != DiagTimeExpired || pp.a.remoteDisc != 0 {
		t.Fatalf("after the detection time: %v diag %v", pp.a.State(), pp.a.LocalDiag())
	}
	if pp.a.TxInterval() != time.Second {
		t.Errorf("back to slow start: %s", pp.a.TxInterval())
	}

	pp = up(t, fast)
	pp.a.SetAdminDown(t0)
	if err := pp.send(pp.a, pp.b, t0); err != nil {
		t.Fatal(err)
	}
	if pp.b.State() != Down || pp.b.LocalDiag() != DiagNeighborDown || pp.b.RemoteDiag() != DiagAdminDown {
		t.Fatalf("peer of an AdminDown session: %v local diag %v remote diag %v", pp.b.State(), pp.b.LocalDiag(), pp.b.RemoteDiag())
	}
}

func TestJitter(t *testing.T) {
	for _, mult := range []uint8{3, 1} {
		cfg := fast
		cfg.DetectMult = mult
		pp := up(t, cfg)
		hi := 1.0
		if mult == 1 {
			hi = 0.9
		}
		for range 1000 {
			var p Packet
			pp.a.Transmit(&p, t0)
			d := pp.a.NextTx().Sub(t0)
			if d < 37500*time.Microsecond || d > time.Duration(hi*50e6) {
				t.Fatalf("mult %d: interval %s outside 75-%.0f %% of 50 ms", mult, d, hi*100)
			}
		}
	}
}

// TestEarliestTx: a packet may go from 75 % of the interval after the
// latest one (the jitter's shortest), so a driver may send it with another
// session's; none is known before the first packet.
func TestEarliestTx(t *testing.T) {
	pp := up(t, fast)
	var p Packet
	pp.a.Transmit(&p, t0)
	if got := pp.a.EarliestTx().Sub(t0); got != 37500*time.Microsecond {
		t.Fatalf("earliest %s after a packet, want 37.5 ms (75 %% of 50 ms)", got)
	}
	if !pp.a.EarliestTx().Before(pp.a.NextTx()) && !pp.a.EarliestTx().Equal(pp.a.NextTx()) {
		t.Fatal("the earliest time after the next due one")
	}
}

func TestAuthentication(t *testing.T) {
	for _, typ := range []AuthType{AuthSimple, AuthKeyedSHA1, AuthMeticulousSHA1} {
		cfg := fast
		cfg.Key = &Key{Type: typ, ID: 1, Secret: []byte("s3cret")}
		pp := up(t, cfg)
		// A wrong key is refused.
		wrong := *pp.a
		wrong.cfg.Key = &Key{Type: typ, ID: 1, Secret: []byte("wrong")}
		if err := pp.send(&wrong, pp.b, t0); !errors.Is(err, DropAuthFailed) {
			t.Errorf("%v: wrong key: %v", typ, err)
		}
		// No auth where it is configured, auth where it is not.
		plain := *pp.a
		plain.cfg.Key = nil
		if err := pp.send(&plain, pp.b, t0); !errors.Is(err, DropAuth) {
			t.Errorf("%v: missing auth: %v", typ, err)
		}
		if typ == AuthSimple {
			continue
		}
		// A replayed sequence number: meticulous refuses it, keyed accepts it (window includes it).
		var p Packet
		pp.a.Transmit(&p, t0)
		raw := p.Encode(pp.buf[:], cfg.Key)
		var q Packet
		if err := q.Decode(raw); err != nil {
			t.Fatal(err)
		}
		if _, err := pp.b.Receive(&q, raw, pp.scratch[:], t0); err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		_, err := pp.b.Receive(&q, raw, pp.scratch[:], t0)
		if (typ == AuthMeticulousSHA1) != errors.Is(err, DropAuthFailed) {
			t.Errorf("%v: replay gave %v", typ, err)
		}
		// A sequence number far ahead is refused.
		pp.a.xmitSeq += 1000
		if err := pp.send(pp.a, pp.b, t0); !errors.Is(err, DropAuthFailed) {
			t.Errorf("%v: sequence jump: %v", typ, err)
		}
	}
}

func TestReceiveAndTransmitDoNotAllocate(t *testing.T) {
	cfg := fast
	cfg.Key = &Key{Type: AuthMeticulousSHA1, ID: 1, Secret: []byte("s3cret")}
	pp := up(t, cfg)
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		var p Packet
		pp.a.Transmit(&p, now)
		raw := p.Encode(pp.buf[:], cfg.Key)
		var q Packet
		if err := q.Decode(raw); err != nil {
			t.Fatal(err)
		}
		if _, err := pp.b.Receive(&q, raw, pp.scratch[:], now); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet, want 0", allocs)
	}
}

func BenchmarkPacketPath(b *testing.B) {
	cfg := fast
	cfg.Key = &Key{Type: AuthMeticulousSHA1, ID: 1, Secret: []byte("s3cret")}
	pp := newPair(cfg)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		var p Packet
		pp.a.Transmit(&p, now)
		raw := p.Encode(pp.buf[:], cfg.Key)
		var q Packet
		_ = q.Decode(raw)
		_, _ = pp.b.Receive(&q, raw, pp.scratch[:], now)
	}
}
