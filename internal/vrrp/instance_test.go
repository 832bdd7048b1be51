package vrrp

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// fakeTransport delivers the advertisements a test injects and records
// what the instance sends.
type fakeTransport struct {
	primary netip.Addr
	in      chan fakeRx
	closed  chan struct{}
	once    sync.Once

	mu   sync.Mutex
	sent []Advertisement
}

type fakeRx struct {
	adv Advertisement
	src netip.Addr
}

func newFakeTransport(primary netip.Addr) *fakeTransport {
	return &fakeTransport{primary: primary, in: make(chan fakeRx, 8), closed: make(chan struct{})}
}

func (f *fakeTransport) Primary() (netip.Addr, error) { return f.primary, nil }
func (f *fakeTransport) Refresh() (bool, error)       { return false, nil }

func (f *fakeTransport) Send(a *Advertisement, _ netip.Addr) error {
	f.mu.Lock()
	f.sent = append(f.sent, *a)
	f.mu.Unlock()
	return nil
}

func (f *fakeTransport) Receive([]byte) (Advertisement, netip.Addr, error) {
	select {
	case rx := <-f.in:
		return rx.adv, rx.src, nil
	case <-f.closed:
		return Advertisement{}, netip.Addr{}, net.ErrClosed
	}
}

func (f *fakeTransport) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

// decisions records what the instance asks for, in order.
type decisions struct {
	mu   sync.Mutex
	held []bool
	seen chan struct{}
}

func (d *decisions) decide(_ netip.Prefix, hold bool) {
	d.mu.Lock()
	d.held = append(d.held, hold)
	d.mu.Unlock()
	select {
	case d.seen <- struct{}{}:
	default:
	}
}

func (d *decisions) snapshot() []bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]bool(nil), d.held...)
}

// TestWeakerMasterAnnouncedTwice: a master that hears a weaker master (two
// backups took over together; we won) asks for the VIP to be announced at
// once and once more reannounceAgain later, so the loser's gratuitous ARP is
// not the last one the neighbours see.
func TestWeakerMasterAnnouncedTwice(t *testing.T) {
	vip := netip.MustParsePrefix("192.0.2.100/32")
	inst, tr, d := runInstance(t, netip.MustParseAddr("192.0.2.13"), 100*time.Millisecond)
	loser := netip.MustParseAddr("192.0.2.11")
	inst.SetCandidate(true)
	waitFor := func(what string, cond func([]bool) bool) { t.Helper(); waitDecisions(t, d, what, cond) }
	count := func(held []bool) (n int) {
		for _, h := range held {
			if h {
				n++
			}
		}
		return n
	}
	waitFor("becoming master", func(h []bool) bool { return count(h) == 1 })
	// The loser's advertisement: same priority, lower address.
	tr.in <- fakeRx{adv: Advertisement{VRID: 51, Priority: 100, Interval: 10, Addresses: []netip.Addr{vip.Addr()}}, src: loser}
	waitFor("announcing at once and once more", func(h []bool) bool { return count(h) == 3 })
	if st := inst.Status(); st.State != Master {
		t.Fatalf("state %s after hearing a weaker master, want master", st.State)
	}
	held := d.snapshot()
	for i, h := range held { // false until master (no VIP left behind), then only true
		if i > 0 && held[i-1] && !h {
			t.Fatalf("decisions %v: the VIP was released", held)
		}
	}
}

// runInstance runs an instance on a fake transport until the test ends.
func runInstance(t *testing.T, primary netip.Addr, interval time.Duration) (*Instance, *fakeTransport, *decisions) {
	t.Helper()
	tr := newFakeTransport(primary)
	inst := NewInstance(Config{VIP: netip.MustParsePrefix("192.0.2.100/32"), VRID: 51, Priority: 100, Interval: interval}, tr,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	d := &decisions{seen: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { inst.Run(ctx, d.decide); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return inst, tr, d
}

// waitDecisions waits until cond holds for the decisions so far.
func waitDecisions(t *testing.T, d *decisions, what string, cond func([]bool) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !cond(d.snapshot()) {
		select {
		case <-d.seen:
		case <-deadline:
			t.Fatalf("%s: decisions %v", what, d.snapshot())
		}
	}
}

func last(h []bool) bool { return len(h) > 0 && h[len(h)-1] }

// TestResignKeepsVIPUntilNewMaster: a master that stops being a candidate
// sends priority 0 at once but keeps the VIP until another master
// advertises (make before break), or until the handover wait passes.
func TestResignKeepsVIPUntilNewMaster(t *testing.T) {
	inst, tr, d := runInstance(t, netip.MustParseAddr("192.0.2.11"), 100*time.Millisecond)
	inst.SetCandidate(true)
	waitDecisions(t, d, "becoming master", last)
	inst.SetCandidate(false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr.mu.Lock()
		n := len(tr.sent)
		zero := n > 0 && tr.sent[n-1].Priority == 0
		tr.mu.Unlock()
		if zero {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no priority-0 advertisement after resigning")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if h := d.snapshot(); !last(h) {
		t.Fatalf("decisions %v: the VIP went before another master announced itself", h)
	}
	vip := netip.MustParsePrefix("192.0.2.100/32").Addr()
	tr.in <- fakeRx{adv: Advertisement{VRID: 51, Priority: 100, Interval: 10, Addresses: []netip.Addr{vip}}, src: netip.MustParseAddr("192.0.2.12")}
	waitDecisions(t, d, "releasing once the new master advertised", func(h []bool) bool { return !last(h) })

	// Nobody takes over: released after the handover wait all the same.
	inst2, _, d2 := runInstance(t, netip.MustParseAddr("192.0.2.13"), 10*time.Millisecond)
	inst2.SetCandidate(true)
	waitDecisions(t, d2, "becoming master", last)
	inst2.SetCandidate(false)
	waitDecisions(t, d2, "releasing after the handover wait", func(h []bool) bool { return !last(h) })
}
