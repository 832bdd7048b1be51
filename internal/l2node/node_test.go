package l2node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/acd"
	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/l2"
	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/novaedge/cpvip/internal/reconcile/reconciletest"
	"github.com/novaedge/cpvip/internal/vrrp"
)

var (
	testVIP   = netip.MustParsePrefix("192.0.2.100/32")
	testSelf  = netip.MustParseAddr("192.0.2.11")
	stronger  = netip.MustParseAddr("192.0.2.12") // another router of the group, priority 200
	errNoSuch = errors.New("no such interface")
)

// conn is a transport that sends nowhere and receives nothing; gone: the
// interface is deleted (Refresh), down: it has no carrier.
type conn struct{ gone, down bool }

func (c *conn) Primary() (netip.Addr, error)               { return testSelf, nil }
func (c *conn) Send(*vrrp.Advertisement, netip.Addr) error { return nil }
func (c *conn) Pending() bool                              { return false }
func (c *conn) Close() error                               { return nil }
func (c *conn) Carrier() (bool, error)                     { return !c.down, nil }

func (c *conn) Receive() (vrrp.Advertisement, netip.Addr, error) {
	return vrrp.Advertisement{}, netip.Addr{}, net.ErrClosed
}

func (c *conn) Refresh() (bool, error) {
	if c.gone {
		return false, vrrp.ErrGone
	}
	return false, nil
}

// sent is one announcement the node made: the address, and when
// (harness.since: after a time).
type sent struct {
	addr netip.Addr
	at   time.Duration
}

func (s sent) String() string { return fmt.Sprintf("%v@%v", s.addr, s.at) }

// self and vip are the announcements of our own address and of the VIP at
// each of at.
func self(at time.Duration) sent { return sent{testSelf, at} }

func vip(at ...time.Duration) []sent {
	out := make([]sent, len(at))
	for k, a := range at {
		out[k] = sent{testVIP.Addr(), a}
	}
	return out
}

// harness is a node without a conflict check (one VIP; our own address
// 192.0.2.11) over a fake kernel, on a fake clock: each event is handed
// at the clock, and the deadline it returns is kept (run wakes it then).
type harness struct {
	t     *testing.T
	cfg   *config.Config
	n     *Node
	inst  *vrrp.Instance
	conn  *conn
	addrs *reconciletest.Addrs
	start time.Time
	clock time.Time
	next  time.Time
	sent  []sent
	// failing, failingSelf: how many announcements of the VIP, of our own
	// address, fail next.
	failing, failingSelf int
	// queued, if set, is what the kernel queued, handed to the node when
	// the election reads it (the Reader); reads counts the reads.
	queued func()
	reads  int
	// kernel and link are netlink's news for the node's feed.
	kernel chan reconcile.Event
	link   chan struct{}
}

// newHarness starts a node of the defaults with env's settings, its
// primary address found.
func newHarness(t *testing.T, env map[string]string) *harness {
	h := newUnstarted(t, env)
	h.handle(vrrp.Event{Kind: vrrp.PrimariesFound, Primaries: []netip.Addr{testSelf}})
	return h
}

// newUnstarted makes a node of the defaults with env's settings whose
// primary address is not found yet.
func newUnstarted(t *testing.T, env map[string]string, bound ...netip.Prefix) *harness {
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
	h := &harness{t: t, cfg: cfg, conn: &conn{}, kernel: make(chan reconcile.Event, 1), link: make(chan struct{}, 1), addrs: reconciletest.New(bound...), start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.clock = h.start
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h.inst = Instance(cfg, false, nil, nil, []vrrp.Transport{h.conn}, log)
	h.n = New(Parts{Config: cfg, Interface: cfg.Interface, Inst: h.inst, Rec: reconcile.New(h.addrs, cfg.VIPAddress),
		Announce: h.announce, Log: log, Kernel: h.kernel, Link: h.link}, h.start)
	return h
}

func (h *harness) now() time.Time { return h.clock }

func (h *harness) announce(addr netip.Addr) error {
	h.sent = append(h.sent, sent{addr, h.clock.Sub(h.start)})
	fails := &h.failing
	if addr == testSelf {
		fails = &h.failingSelf
	}
	if *fails > 0 {
		*fails--
		return errNoSuch
	}
	return nil
}

func (h *harness) read() time.Time {
	h.reads++
	if q := h.queued; q != nil {
		h.queued = nil
		q()
	}
	return h.clock
}

// handle hands the node e at the clock.
func (h *harness) handle(e vrrp.Event) { h.next = h.n.Handle(e, h.now, h.read) }

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
// when it took over.
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

// since returns the announcements made from at on, each at its time
// after at.
func (h *harness) since(at time.Time) []sent {
	var out []sent
	for _, s := range h.sent {
		if d := s.at - at.Sub(h.start); d >= 0 {
			out = append(out, sent{s.addr, d})
		}
	}
	return out
}

// expect fails the test unless the announcements from at on are want.
func (h *harness) expect(at time.Time, want []sent, why string) {
	h.t.Helper()
	if got := h.since(at); !slices.Equal(got, want) {
		h.t.Fatalf("%s: announced %v, want %v", why, got, want)
	}
}

// adv is an advertisement of our group's VIP with priority and our
// interval.
func (h *harness) adv(priority uint8) vrrp.Advertisement {
	return vrrp.Advertisement{VRID: uint8(h.cfg.VRID), Priority: priority, Interval: vrrp.Centiseconds(h.cfg.AdvertInterval),
		Addresses: []netip.Addr{testVIP.Addr()}}
}

// receive hands the node a stronger master's advertisement.
func (h *harness) receive() {
	h.handle(vrrp.Event{Kind: vrrp.Received, Adv: h.adv(200), Src: stronger})
}

// queue makes the kernel's queue hold a stronger master's advertisement
// until the election reads it: a nested Handle, as the driver's reader
// hands it.
func (h *harness) queue() {
	h.queued = func() { h.n.Handle(vrrp.Event{Kind: vrrp.Received, Adv: h.adv(200), Src: stronger}, h.now, h.read) }
}

func after(t time.Time, d time.Duration) time.Time { return t.Add(d) }

const (
	gap = l2.RepeatGap
	// backupFor is less than a backup waits before it takes over again
	// (three intervals and the skew, at ADVERT_INTERVAL's default), more
	// than the handover grace.
	backupFor = 500 * time.Millisecond
)

// TestTakeoverBurst: a takeover announces our own address first, then
// the VIP, GARP_REPEAT times RepeatGap apart; then, with GARP_REFRESH, the
// VIP every refresh, else nothing more and no burst is left.
func TestTakeoverBurst(t *testing.T) {
	for _, c := range []struct {
		name, repeat, refresh string
		want                  []sent
	}{
		{"repeat 3, no refresh", "3", "0s", append([]sent{self(0)}, vip(0, gap, 2*gap)...)},
		{"repeat 1, no refresh", "1", "0s", append([]sent{self(0)}, vip(0)...)},
		{"repeat 2, refresh 10s", "2", "10s", append([]sent{self(0)}, vip(0, gap, gap+10*time.Second, gap+20*time.Second)...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, map[string]string{"NOVAEDGE_CP_VIP_GARP_REPEAT": c.repeat, "NOVAEDGE_CP_VIP_GARP_REFRESH": c.refresh})
			took := h.master()
			h.run(after(took, 25*time.Second))
			h.expect(took, c.want, "the takeover")
			if _, running := h.n.bursts[testVIP.Addr()]; running != (c.refresh != "0s") {
				t.Fatalf("burst left: %v, want one only with a refresh", running)
			}
			if h.n.Sent.Load() != uint64(len(c.want)) {
				t.Fatalf("Sent = %d, want %d (each announcement, our own address's too)", h.n.Sent.Load(), len(c.want))
			}
		})
	}
}

// TestLinkUpAnnouncesAgain: the link coming up (netlink's LinkUp) makes
// the held VIP announced again at once, our own address first.
func TestLinkUpAnnouncesAgain(t *testing.T) {
	h := newHarness(t, map[string]string{"NOVAEDGE_CP_VIP_GARP_REPEAT": "1"})
	h.run(after(h.master(), 10*time.Second))
	up := h.clock
	h.handle(News{Kind: Kernel, Netlink: reconcile.LinkUp}.Event())
	h.run(after(up, 10*time.Second))
	h.expect(up, append([]sent{self(0)}, vip(0)...), "the link up")
}

// TestFailedSendIsRetried: an announcement whose send fails is tried again
// RetryGap later, SendTries tries in all; one that fails every try counts
// in SendFailed, one that goes in Sent. Our own address, first in a
// takeover, is retried the same way before the VIP goes (the link-local
// address still tentative after link up).
func TestFailedSendIsRetried(t *testing.T) {
	retry := l2.RetryGap
	for _, c := range []struct {
		name                 string
		failingSelf, failing int
		want                 []sent
		sent, failed         uint64
	}{
		{"goes at the third try", 0, 2, append([]sent{self(0)}, vip(0, retry, 2*retry)...), 2, 0},
		{"fails every try", 0, l2.SendTries, append([]sent{self(0)}, vip(0, retry, 2*retry, 3*retry, 4*retry)...), 1, 1},
		{"our own address at the second try", 1, 0, []sent{self(0), self(retry), {testVIP.Addr(), retry}}, 2, 0},
		{"our own address fails every try", l2.SendTries, 0,
			append([]sent{self(0), self(retry), self(2 * retry), self(3 * retry), self(4 * retry)}, vip(4*retry)...), 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, map[string]string{"NOVAEDGE_CP_VIP_GARP_REPEAT": "1"})
			h.failing, h.failingSelf = c.failing, c.failingSelf
			took := h.master()
			h.run(after(took, time.Minute))
			h.expect(took, c.want, "a failing send")
			if h.n.Sent.Load() != c.sent || h.n.SendFailed.Load() != c.failed {
				t.Fatalf("Sent %d, SendFailed %d; want %d, %d", h.n.Sent.Load(), h.n.SendFailed.Load(), c.sent, c.failed)
			}
		})
	}
}

// TestRetryGoesOnlyWhileLeading: each try of a failed announcement asks
// the gates again: a node that stepped back while its retry waited (it
// yielded to a stronger master, the handover grace; it resigned, make
// before break) still holds the VIP and sends nothing more.
func TestRetryGoesOnlyWhileLeading(t *testing.T) {
	for _, c := range []struct {
		name    string
		failing int
		env     map[string]string
		leave   func(*harness)
	}{
		{"yielded to a stronger master", 1, map[string]string{"NOVAEDGE_CP_VIP_GARP_REPEAT": "3"}, (*harness).receive},
		{"resigned", 3, map[string]string{"NOVAEDGE_CP_VIP_GARP_REPEAT": "3", "NOVAEDGE_CP_VIP_FAIL_OPEN": "false"}, func(h *harness) {
			h.handle(vrrp.Event{Kind: vrrp.HealthChanged, Health: health.Transition{State: health.Unhealthy, Changed: true, Settled: true}})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.env)
			h.failing = c.failing
			took := h.master()
			h.run(after(took, l2.RetryGap*3/4)) // the first send failed, its retry waits
			c.leave(h)
			if h.inst.Leading() || !h.n.loop.Wanted(testVIP.Addr()) {
				t.Fatal("want the node a backup still holding the VIP")
			}
			left := h.clock
			h.run(after(left, 400*time.Millisecond))
			h.expect(left, nil, "after the node stepped back")
		})
	}
}

// TestReleaseEndsAFailingBurst: the election letting the VIP go (the
// carrier lost; the interface deleted, which takes the VIP with it: the
// kernel's list fails, no pass removes it) ends its burst, a failed send's
// retries included: nothing is announced after, though the sends would
// now go.
func TestReleaseEndsAFailingBurst(t *testing.T) {
	for _, c := range []struct {
		name string
		lose func(*harness)
	}{
		{"carrier lost", func(h *harness) { h.conn.down = true }},
		{"interface deleted", func(h *harness) { h.conn.gone = true; h.addrs.Fail(nil, errNoSuch) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, map[string]string{"NOVAEDGE_CP_VIP_GARP_REPEAT": "3"})
			h.failing = 1000
			h.run(after(h.master(), l2.RetryGap/2)) // the first send failed, its retry waits
			released := h.clock
			c.lose(h)
			h.handle(News{Kind: LinkChanged}.Event())
			if h.inst.Leading() || h.n.loop.Wanted(testVIP.Addr()) {
				t.Fatal("the election did not let the VIP go")
			}
			h.failing = 0
			h.run(after(released, time.Minute))
			h.expect(released, nil, "after the release")
			if len(h.n.bursts) != 0 {
				t.Fatalf("bursts left: %v", h.n.bursts)
			}
		})
	}
}

// TestLateRepeatReadsTheQueueFirst: a repeat found late (the node not
// woken for longer than the late-repeat bound) goes only once the
// election has read what the kernel queued, and only if this node is
// still the master then; one on time reads nothing. The interval is long
// so that no timer of the election's reads the queue meanwhile.
func TestLateRepeatReadsTheQueueFirst(t *testing.T) {
	for _, c := range []struct {
		name   string
		late   time.Duration
		queued bool // a stronger master's advertisement
		reads  int
		want   []sent
	}{
		{"on time", 0, false, 0, vip(0)},
		{"late, still the master", 2 * time.Second, false, 1, vip(0)},
		{"late, a stronger master queued", 2 * time.Second, true, 1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, map[string]string{"NOVAEDGE_CP_VIP_GARP_REPEAT": "2", "NOVAEDGE_CP_VIP_ADVERT_INTERVAL": "10s"})
			took := h.master()
			due := h.n.bursts[testVIP.Addr()].due
			if !due.Equal(after(took, gap)) || !h.next.Equal(due) {
				t.Fatalf("repeat due at %v, woken at %v; want both %v", due, h.next, after(took, gap))
			}
			if c.queued {
				h.queue()
			}
			h.reads = 0
			h.clock = after(due, c.late)
			h.handle(vrrp.Event{Kind: vrrp.TimerFired})
			if h.reads != c.reads {
				t.Fatalf("the queue read %d times, want %d", h.reads, c.reads)
			}
			h.expect(h.clock, c.want, "the repeat")
			if c.queued && (h.inst.Leading() || !h.n.loop.Wanted(testVIP.Addr())) {
				t.Fatal("want the node stepped back, the VIP still held (a handover)")
			}
		})
	}
}

// TestOnlyTheMasterAnnounces: a node that is not the master announces
// nothing, though it still holds the VIP: a master that yielded to a
// stronger one (the handover grace), or resigned (make before break). The
// repeat due meanwhile does not go, nor does a defence.
func TestOnlyTheMasterAnnounces(t *testing.T) {
	for _, c := range []struct {
		name  string
		at    time.Duration // after the takeover, before the repeat
		leave func(*harness)
	}{
		{"yielded to a stronger master", gap - 50*time.Millisecond, (*harness).receive},
		{"resigned", gap - 300*time.Millisecond, func(h *harness) {
			h.handle(vrrp.Event{Kind: vrrp.HealthChanged, Health: health.Transition{State: health.Unhealthy, Changed: true, Settled: true}})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, map[string]string{"NOVAEDGE_CP_VIP_GARP_REPEAT": "3", "NOVAEDGE_CP_VIP_FAIL_OPEN": "false"})
			h.run(after(h.master(), c.at))
			left := h.clock
			c.leave(h)
			if h.inst.Leading() || !h.n.loop.Wanted(testVIP.Addr()) {
				t.Fatal("want the node a backup still holding the VIP")
			}
			owners{h.n}.Defend(testVIP.Addr())
			h.handle(News{Kind: Noted}.Event())
			h.run(after(left, backupFor)) // past the repeat's time
			h.expect(left, nil, "after the node stepped back")
		})
	}
}

// TestAgain: the conflict check's notes announce the VIP again, once the
// election has read what the kernel queued, only from the master: on
// Contested (another router of our group announced it) only a master
// established (for 4 advertisement intervals), not one that just took
// over; on Defend however long it has been the master.
func TestAgain(t *testing.T) {
	established := 4 * 200 * time.Millisecond // ADVERT_INTERVAL's default
	for _, c := range []struct {
		name   string
		defend bool
		at     time.Duration // after the takeover
		queued bool          // a stronger master's advertisement
		goes   bool
	}{
		{"contested, just took over", false, established - time.Millisecond, false, false},
		{"contested, established", false, established, false, true},
		{"contested, established, a stronger master queued", false, established, true, false},
		{"defend, just took over", true, time.Millisecond, false, true},
		{"defend, established", true, established, false, true},
		{"defend, a stronger master queued", true, established, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, map[string]string{"NOVAEDGE_CP_VIP_GARP_REPEAT": "1"})
			h.run(after(h.master(), c.at))
			noted := h.clock
			if c.queued {
				h.queue()
			}
			if o := (owners{h.n}); c.defend {
				o.Defend(testVIP.Addr())
			} else {
				o.Contested(testVIP.Addr())
			}
			h.handle(News{Kind: Noted}.Event())
			if c.queued && h.queued != nil {
				t.Fatal("the note did not have the election read the queue")
			}
			var want []sent
			if c.goes {
				want = append([]sent{self(0)}, vip(0)...)
			}
			h.run(after(noted, backupFor))
			h.expect(noted, want, "the note")
		})
	}
}

// TestShutDown: shutting down releases every VIP and leaves no burst; the
// node returns no deadline, then and for every later event, and does
// nothing more.
func TestShutDown(t *testing.T) {
	h := newHarness(t, map[string]string{"NOVAEDGE_CP_VIP_GARP_REFRESH": "10s"})
	h.run(after(h.master(), time.Second))
	if !h.addrs.Has(testVIP.Addr()) || len(h.n.bursts) == 0 {
		t.Fatal("want the VIP bound and announced before the shutdown")
	}
	h.handle(vrrp.Event{Kind: vrrp.ShutDown})
	stopped := h.clock
	if !h.next.IsZero() {
		t.Fatalf("deadline %v after the shutdown, want none", h.next)
	}
	if got, _ := h.addrs.List(); len(got) != 0 || len(h.n.bursts) != 0 {
		t.Fatalf("after the shutdown: addresses %v, bursts %v; want none", got, h.n.bursts)
	}
	for _, e := range []vrrp.Event{
		{Kind: vrrp.TimerFired},
		{Kind: vrrp.HealthChanged, Health: health.Transition{State: health.Healthy, Changed: true, Settled: true}},
		News{Kind: Kernel, Netlink: reconcile.LinkUp}.Event(),
		{Kind: vrrp.PrimariesFound, Primaries: []netip.Addr{testSelf}},
	} {
		h.clock = h.clock.Add(10 * time.Second)
		if h.handle(e); !h.next.IsZero() {
			t.Fatalf("%v after the shutdown: deadline %v, want none", e.Kind, h.next)
		}
	}
	if got, _ := h.addrs.List(); len(got) != 0 {
		t.Fatalf("bound %v after the shutdown", got)
	}
	h.expect(stopped, nil, "after the shutdown")
}

// TestUnknownNewsPanics: news of a kind the node does not know is a bug
// in its driver: Handle panics.
func TestUnknownNewsPanics(t *testing.T) {
	for _, kind := range []NewsKind{0, Kernel + 1} {
		t.Run(kind.String(), func(t *testing.T) {
			h := newHarness(t, nil)
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			h.handle(News{Kind: kind}.Event())
		})
	}
}

// TestBeforeThePrimaries: until the election's primaries are found its
// events wait, but the reconcile passes run from the first event (a stale
// VIP of an earlier run goes) and the link's news reaches only the
// conflict check; the election looks at the link as it starts.
func TestBeforeThePrimaries(t *testing.T) {
	h := newUnstarted(t, nil, testVIP)
	h.conn.down = true
	h.handle(vrrp.Event{Kind: vrrp.Started})
	if h.addrs.Has(testVIP.Addr()) {
		t.Fatal("a stale VIP is still bound after the first event")
	}
	h.handle(News{Kind: LinkChanged}.Event())
	h.run(after(h.start, 10*time.Second))
	if st := h.n.elect.Core().State(); st == vrrp.Fault {
		t.Fatalf("the election stepped before its primaries: %v", st)
	}
	h.handle(vrrp.Event{Kind: vrrp.PrimariesFound, Primaries: []netip.Addr{testSelf}})
	if st := h.n.elect.Core().State(); st != vrrp.Fault {
		t.Fatalf("state %v as it starts without carrier, want fault", st)
	}
}

// TestFeedTellsTheLinkFirst: netlink tells of the link itself before its
// news of the addresses (ifaddr.Watch); the feed keeps that order though
// both wait, so the election and the conflict check look at an interface
// made again before a pass binds on it.
func TestFeedTellsTheLinkFirst(t *testing.T) {
	for range 50 {
		h := newHarness(t, nil)
		h.link <- struct{}{}
		h.kernel <- reconcile.LinkUp
		ctx, cancel := context.WithCancel(context.Background())
		feed := h.n.feed(ctx)
		first, second := (<-feed).Beside.(News), (<-feed).Beside.(News)
		cancel()
		if first.Kind != LinkChanged || second.Kind != Kernel || second.Netlink != reconcile.LinkUp {
			t.Fatalf("the feed handed %v then %v, want the link changed, then the kernel's link up", first, second)
		}
	}
}

// TestResumedVIPRenewedBeforeThePrimaries: a VIP found bound at start (an
// earlier run killed) is kept until the first health verdict; the node's
// first event passes over it, and its lifetime is renewed a quarter of a
// renewal period later (reconcile.Reconciler.RenewAt), before the
// election's primaries are found. With no verdict within the resume's
// wait (three intervals) it goes, primaries or not.
func TestResumedVIPRenewedBeforeThePrimaries(t *testing.T) {
	cfg, err := config.LoadMap(map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": testVIP.String(), "NOVAEDGE_CP_VIP_INTERFACE": "eth0",
		"NOVAEDGE_CP_VIP_CONFLICT_CHECK": "false"})
	if err != nil {
		t.Fatal(err)
	}
	addrs, start := reconciletest.New(testVIP), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := reconcile.New(addrs, cfg.VIPAddress)
	clock := start
	rec.SetLifetime(Lifetime(cfg), func() time.Time { return clock })
	resume, err := rec.Resume(false)
	if err != nil || !resume {
		t.Fatalf("resume %v, %v", resume, err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	n := New(Parts{Config: cfg, Interface: "eth0", Inst: Instance(cfg, true, nil, nil, []vrrp.Transport{&conn{}}, log), Rec: rec,
		Announce: func(netip.Addr) error { return nil }, Log: log}, start)
	now := func() time.Time { return clock }
	next := n.Handle(vrrp.Event{Kind: vrrp.Started}, now, now)
	if want := start.Add(Lifetime(cfg).Renew / 4); next.After(want) {
		t.Fatalf("woken next at %v, after the renewal due at %v", next.Sub(start), want.Sub(start))
	}
	clock = next
	n.Handle(vrrp.Event{Kind: vrrp.TimerFired}, now, now)
	if got := addrs.Take(); !slices.ContainsFunc(got, func(m string) bool { return strings.HasPrefix(m, "add "+testVIP.String()+" for ") }) {
		t.Fatalf("kernel calls %v: the kept VIP's lifetime not renewed", got)
	}
	if !addrs.Has(testVIP.Addr()) {
		t.Fatal("the kept VIP was removed")
	}
	// The node never asks to be woken at a time already past.
	for end := start.Add(3*cfg.AdvertInterval + time.Second); clock.Before(end); {
		next := n.Handle(vrrp.Event{Kind: vrrp.TimerFired}, now, now)
		if !next.After(clock) {
			t.Fatalf("at %v the node asks to be woken at %v: it would spin", clock.Sub(start), next.Sub(start))
		}
		clock = next
	}
	if addrs.Has(testVIP.Addr()) {
		t.Fatal("the kept VIP is still bound past the resume's wait, with no verdict")
	}
}

// TestNoRoundBeforeThePrimaries: the conflict check starts with the
// election (PrimariesFound); a wire its reader attached before that (a
// wake-up) asks for no round, and the node is not woken again and again.
func TestNoRoundBeforeThePrimaries(t *testing.T) {
	h := newUnstarted(t, nil)
	clock := h.start
	now := func() time.Time { return clock }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	known := acd.NewKnown(nil, now, func(netip.Addr) {})
	g := acd.NewGuard([]netip.Addr{testVIP.Addr()}, nil, known, now, log)
	Guard(g, h.cfg)
	n := New(Parts{Config: h.cfg, Interface: "eth0", Inst: Instance(h.cfg, false, g, known, []vrrp.Transport{&conn{}}, log),
		Rec: reconcile.New(reconciletest.New(), h.cfg.VIPAddress), Guard: g, Known: known, Announce: func(netip.Addr) error { return nil }, Log: log}, clock)
	g.Attach(testVIP.Addr(), nopWire{})
	next := n.Handle(vrrp.Event{Kind: vrrp.Started}, now, now)
	for end := clock.Add(10 * time.Second); clock.Before(end); {
		if !next.After(clock) {
			t.Fatalf("at %v the node asks to be woken at %v: it would spin", clock.Sub(h.start), next.Sub(h.start))
		}
		clock = next
		next = n.Handle(vrrp.Event{Kind: vrrp.TimerFired}, now, now)
	}
}

// nopWire is a conflict-check wire that probes nowhere and reads nothing.
type nopWire struct{}

func (nopWire) Probe() error             { return nil }
func (nopWire) Read() (acd.Claim, error) { return acd.Claim{}, net.ErrClosed }
func (nopWire) Close() error             { return nil }
