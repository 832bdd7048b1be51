package bfd

import (
	"encoding/binary"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/novaedge/cpvip/internal/quietio"
	"golang.org/x/sys/unix"
)

// ttlCmsg is the control message the kernel gives with IP_RECVTTL.
func ttlCmsg(ttl int) []byte {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.IPPROTO_IP, unix.IP_TTL
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], uint32(ttl))
	return b
}

// handler is a Manager with one session, pp.b, with a peer at 127.0.0.1
// whose packets are pp.a's; what it sends goes to a local sink.
func handler(t *testing.T, pp *peerPair) (*Manager, *peer) {
	t.Helper()
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	tx, err := net.DialUDP("udp4", nil, sink.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	snd, err := quietio.NewSender(tx)
	if err != nil {
		t.Fatal(err)
	}
	src := netip.MustParseAddr("127.0.0.1")
	p := newPeer(src, tx, snd, 50000, pp.b)
	m := &Manager{cfg: pp.b.cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), notify: newNotifier(nil),
		peers: []*peer{p}, byDisc: map[uint32]*peer{0x2222: p}, byAddr: map[netip.Addr]*peer{src: p}}
	return m, p
}

// TestHandleDoesNotAllocate: the whole receive path of a packet, from the
// socket's bytes to the session and the answer to a Poll, allocates nothing.
func TestHandleDoesNotAllocate(t *testing.T) {
	cfg := fast
	cfg.Key = &Key{Type: AuthMeticulousSHA1, ID: 1, Secret: []byte("s3cret")}
	pp := up(t, cfg)
	m, p := handler(t, pp)
	oob := ttlCmsg(TTL)
	src := netip.MustParseAddr("127.0.0.1")
	now := t0
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		var pk Packet
		pp.a.Transmit(&pk, now)
		i++
		pk.Poll = i%2 == 0 // every other packet asks for an answer at once
		m.handle(pk.Encode(pp.buf[:], cfg.Key), oob, src, now)
		m.due(now)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet, want 0", allocs)
	}
	if p.s.State() != Up {
		t.Errorf("session %v after the packets, want up", p.s.State())
	}
	if d := m.Drops(); d[DropAuthFailed]+d[DropTTL] != 0 {
		t.Errorf("drops %v", d)
	}
}

func TestHandleDropsWrongTTL(t *testing.T) {
	pp := up(t, fast)
	m, _ := handler(t, pp)
	var pk Packet
	pp.a.Transmit(&pk, t0)
	for _, oob := range [][]byte{ttlCmsg(254), nil} {
		m.handle(pk.Encode(pp.buf[:], nil), oob, netip.MustParseAddr("127.0.0.1"), t0)
	}
	if got := m.Drops()[DropTTL]; got != 2 {
		t.Errorf("%d TTL drops, want 2 (TTL 254, and none given)", got)
	}
}

// TestNextDeadline: the loop wakes for the earliest of every session's
// transmit and detection times.
func TestNextDeadline(t *testing.T) {
	pp := up(t, fast)
	m := &Manager{peers: []*peer{{s: pp.a}, {s: pp.b}}}
	want := pp.a.NextTx()
	for _, at := range []time.Time{pp.b.NextTx(), pp.a.DetectDeadline(), pp.b.DetectDeadline()} {
		if !at.IsZero() && at.Before(want) {
			want = at
		}
	}
	if got := m.next(); !got.Equal(want) {
		t.Errorf("next = %v, want %v", got, want)
	}
}

func FuzzTTLFrom(f *testing.F) {
	f.Add(ttlCmsg(255))
	f.Add(append(ttlCmsg(1), ttlCmsg(255)...))
	f.Fuzz(func(t *testing.T, oob []byte) {
		ttlFrom(oob) // must not panic, whatever the kernel or a fuzzer hands it
	})
}

// TestPacketBringsTimerForward: with asymmetric intervals (we send every
// 300 ms, the peer every 50 ms) a received packet sets a detection time
// (150 ms) before our next transmit; the timer must be brought forward to
// it, or a dead peer would be noticed only at our next transmit.
func TestPacketBringsTimerForward(t *testing.T) {
	slow := Config{DesiredMinTx: 300 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 3}
	quick := Config{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 300 * time.Millisecond, DetectMult: 3}
	pp := &peerPair{
		a: NewSession(quick, 0x1111, rand.New(rand.NewPCG(1, 1)), t0),
		b: NewSession(slow, 0x2222, rand.New(rand.NewPCG(2, 2)), t0),
	}
	for _, step := range [][2]*Session{{pp.a, pp.b}, {pp.b, pp.a}, {pp.a, pp.b}, {pp.b, pp.a}} {
		if err := pp.send(step[0], step[1], t0); err != nil {
			t.Fatal(err)
		}
	}
	m, p := handler(t, pp)
	now := t0.Add(time.Second)
	m.due(now) // b sends: its next transmit is further away than 150 ms
	m.timer, m.timerAt = quietio.NewTimer(time.Hour), p.s.NextTx()
	defer m.timer.Close()
	var pk Packet
	pp.a.Transmit(&pk, now)
	m.handle(pk.Encode(pp.buf[:], nil), ttlCmsg(TTL), netip.MustParseAddr("127.0.0.1"), now)
	if want := p.s.DetectDeadline(); want.IsZero() || !m.timerAt.Equal(want) || !want.Before(p.s.NextTx()) {
		t.Errorf("timer at %v, want the detection deadline %v (before the next transmit %v)",
			m.timerAt.Sub(now), want.Sub(now), p.s.NextTx().Sub(now))
	}
}

// TestDueSendsTogether: when one session's packet is due, another whose
// jitter allows it now (75 % of its interval after its latest packet) goes
// with it; one whose 75 % has not come stays; a pass that sends nothing
// (a detection deadline, a stale tick) sends nothing early.
func TestDueSendsTogether(t *testing.T) {
	ppA, ppB, ppC := up(t, fast), up(t, fast), up(t, fast)
	m, pa := handler(t, ppA)
	_, pb := handler(t, ppB)
	_, pc := handler(t, ppC)
	m.peers = []*peer{pa, pb, pc}
	var pk Packet
	pa.s.Transmit(&pk, t0)                          // due again within 37.5-50 ms
	pb.s.Transmit(&pk, t0)                          // may go from 37.5 ms
	pc.s.Transmit(&pk, t0.Add(20*time.Millisecond)) // may go from 57.5 ms
	now := pa.s.NextTx()
	if m.due(now.Add(-time.Millisecond)); !pb.s.lastTx.Equal(t0) {
		t.Fatal("a pass that sends nothing sent a packet early")
	}
	m.due(now)
	if !pa.s.lastTx.Equal(now) || !pb.s.lastTx.Equal(now) {
		t.Fatalf("a due, b allowed: sent at %v and %v, want both at %v", pa.s.lastTx.Sub(t0), pb.s.lastTx.Sub(t0), now.Sub(t0))
	}
	if !pc.s.lastTx.Equal(t0.Add(20 * time.Millisecond)) {
		t.Fatalf("c sent at %v, before 75 %% of its interval", pc.s.lastTx.Sub(t0))
	}
}
