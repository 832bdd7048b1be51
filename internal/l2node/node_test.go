package l2node

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/l2"
	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/novaedge/cpvip/internal/reconcile/reconciletest"
	"github.com/novaedge/cpvip/internal/vrrp"
)

var (
	testVIP  = netip.MustParsePrefix("192.0.2.100/32")
	testSelf = netip.MustParseAddr("192.0.2.11")
	errGone  = errors.New("no such interface")
)

// conn is a transport that sends nowhere and receives nothing; gone makes
// the interface deleted (Refresh: vrrp.ErrGone).
type conn struct{ gone bool }

func (c *conn) Primary() (netip.Addr, error)               { return testSelf, nil }
func (c *conn) Send(*vrrp.Advertisement, netip.Addr) error { return nil }
func (c *conn) Pending() bool                              { return false }
func (c *conn) Close() error                               { return nil }
func (c *conn) Carrier() (bool, error)                     { return true, nil }

func (c *conn) Receive() (vrrp.Advertisement, netip.Addr, error) {
	return vrrp.Advertisement{}, netip.Addr{}, net.ErrClosed
}

func (c *conn) Refresh() (bool, error) {
	if c.gone {
		return false, vrrp.ErrGone
	}
	return false, nil
}

// sent is one announcement the node made, and when.
type sent struct {
	addr netip.Addr
	at   time.Duration // since the harness's start
}

// harness is a node without a conflict check (one VIP, 192.0.2.11, over a
// fake kernel) on a fake clock: each call hands it one event at clock and
// keeps the deadline it returns.
type harness struct {
	t     *testing.T
	n     *Node
	inst  *vrrp.Instance
	conn  *conn
	addrs *reconciletest.Addrs
	start time.Time
	clock time.Time
	next  time.Time
	sent  []sent
	fail  error       // what announcements return
	read  vrrp.Reader // nil: the clock
	reads int
}

// newHarness starts a node of the configuration with env's settings over
// the defaults, its primary address found.
func newHarness(t *testing.T, env map[string]string) *harness {
	t.Helper()
	vars := map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": testVIP.String(), "NOVAEDGE_CP_VIP_INTERFACE": "eth0",
		"NOVAEDGE_CP_VIP_CONFLICT_CHECK": "false"}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.LoadMap(vars)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, conn: &conn{}, addrs: reconciletest.New(), start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.clock = h.start
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec := reconcile.New(h.addrs, cfg.VIPAddress)
	h.inst = Instance(cfg, false, nil, nil, []vrrp.Transport{h.conn}, log)
	h.n = New(Parts{Config: cfg, Inst: h.inst, Rec: rec, Announce: h.announce, Log: log}, h.start)
	h.handle(vrrp.Event{Kind: vrrp.PrimariesFound, Primaries: []netip.Addr{testSelf}})
	return h
}

func (h *harness) now() time.Time { return h.clock }

func (h *harness) announce(addr netip.Addr) error {
	h.sent = append(h.sent, sent{addr, h.clock.Sub(h.start)})
	return h.fail
}

func (h *harness) reader() time.Time {
	h.reads++
	if h.read != nil {
		return h.read()
	}
	return h.clock
}

// handle hands the node e at the clock.
func (h *harness) handle(e vrrp.Event) { h.next = h.n.Handle(e, h.now, h.reader) }

// run wakes the node at each deadline it returns up to until, then sets
// the clock to until.
func (h *harness) run(until time.Time) {
	h.t.Helper()
	for i := 0; !h.next.IsZero() && !h.next.After(until); i++ {
		if i > 100000 {
			h.t.Fatalf("the node's deadline stays at %v", h.next)
		}
		h.clock = later(h.clock, h.next)
		h.handle(vrrp.Event{Kind: vrrp.TimerFired})
	}
	h.clock = later(h.clock, until)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// master makes the node healthy and wakes it until it leads; it returns
// when it took over, with the announcements before that forgotten.
func (h *harness) master() time.Time {
	h.t.Helper()
	h.handle(vrrp.Event{Kind: vrrp.HealthChanged, Health: health.Transition{State: health.Healthy, Changed: true, Settled: true}})
	for i := 0; !h.inst.Leading(); i++ {
		if i > 1000 || h.next.IsZero() {
			h.t.Fatal("the node never took over")
		}
		h.clock = later(h.clock, h.next)
		h.handle(vrrp.Event{Kind: vrrp.TimerFired})
	}
	return h.clock
}

// since returns the announcements made from at on, as offsets from at.
func (h *harness) since(at time.Time) []sent {
	var out []sent
	for _, s := range h.sent {
		if d := s.at - at.Sub(h.start); d >= 0 {
			out = append(out, sent{s.addr, d})
		}
	}
	return out
}

func TestProbe(t *testing.T) {
	h := newHarness(t, nil)
	took := h.master()
	h.run(took.Add(time.Minute))
	t.Logf("took %v sent %v bursts %v", took.Sub(h.start), h.sent, h.n.bursts)
	_ = l2.RepeatGap
	_ = slices.Equal[[]int]
}
