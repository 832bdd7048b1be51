package acd

import (
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"
)

// probeNowGuard is a settled guard on a fixed clock for vip and vip6, each
// with a wire, and a third VIP with none; its first round (the scheduled
// probes) is done, so a round within the next second sends only asked
// probes.
func probeNowGuard() (*Guard, []*fakeWire) {
	now := time.Unix(1000, 0)
	none := netip.MustParseAddr("192.0.2.101")
	g := NewGuard([]netip.Addr{vip, vip6, none}, nil, fakeIdentity{}, func() time.Time { return now },
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	wires := []*fakeWire{{}, {}}
	g.Attach(vip, wires[0])
	g.Attach(vip6, wires[1])
	g.started = now.Add(-time.Hour)
	g.Round()
	return g, wires
}

func counts(ws []*fakeWire) (n []int) {
	for _, w := range ws {
		n = append(n, w.count())
	}
	return n
}

// TestProbeNowProbesEachWireOnceAtTheNextRound: ProbeNow sends one probe on
// every attached wire at the next round, however often it was called, and
// none at the round after.
func TestProbeNowProbesEachWireOnceAtTheNextRound(t *testing.T) {
	g, wires := probeNowGuard()
	if n := counts(wires); n[0] != 1 || n[1] != 1 {
		t.Fatalf("scheduled round: probes %v, want [1 1]", n)
	}
	g.ProbeNow()
	g.ProbeNow()
	g.Round()
	if n := counts(wires); n[0] != 2 || n[1] != 2 {
		t.Fatalf("asked twice, one round: probes %v, want [2 2]", n)
	}
	g.Round()
	if n := counts(wires); n[0] != 2 || n[1] != 2 {
		t.Fatalf("a round after the asked one: probes %v, want [2 2] (nothing asked)", n)
	}
}

// yielding is an identity whose Ours yields the processor, as a lookup
// may: a round that judges a claim gives other goroutines a turn between
// its locked sections.
type yielding struct{ fakeIdentity }

func (y yielding) Ours(mac net.HardwareAddr) bool {
	runtime.Gosched()
	return y.fakeIdentity.Ours(mac)
}

// TestProbeNowConcurrentWithRound: ProbeNow's flag is read and cleared
// under the guard's lock (run with -race: ProbeNow is called from the
// election's goroutine while Run's rounds go on).
func TestProbeNowConcurrentWithRound(t *testing.T) {
	const n = 1000
	g, wires := probeNowGuard()
	g.id = yielding{}
	g.Observe(vip, Claim{MAC: foreign}) // judged (Ours) at every round
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // asks throughout the rounds
		defer wg.Done()
		for {
			g.ProbeNow()
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	for range n {
		g.Round()
	}
	close(stop)
	wg.Wait()
	g.Round() // the last ProbeNow's probes, if no round took them yet
	got := counts(wires)
	if got[0] != got[1] || got[0] < 2 || got[0] > n+2 {
		t.Fatalf("probes %v: want the same on both wires, between 2 and %d", got, n+2)
	}
	g.Round()
	if again := counts(wires); again[0] != got[0] || again[1] != got[1] {
		t.Fatalf("a round with nothing asked probed: %v, then %v", got, again)
	}
}
