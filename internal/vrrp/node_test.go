package vrrp

import (
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/health"
)

// TestCatchUpReadsBeforeAnOverdueTimer: after a freeze a health verdict
// (or a reload) that finds the timer overdue runs it first, after the
// advertisements the kernel queued: a master that a backup replaced
// meanwhile sees the taker before anything else it does (it steps back,
// Machine.wasAbsent), and a timer not due reads nothing.
func TestCatchUpReadsBeforeAnOverdueTimer(t *testing.T) {
	n, core := masterNode()
	reads := 0
	now := core.Deadline().Add(-time.Millisecond) // not due yet
	n.catchUp(now, func() time.Time { reads++; return now })
	if reads != 0 {
		t.Fatal("read the queue for a timer not due")
	}
	now = core.Deadline().Add(3 * time.Second) // frozen past the backups' wait
	taker := Advertisement{VRID: 51, Priority: 50, Interval: Centiseconds(time.Second), Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.100")}}
	n.catchUp(now, func() time.Time {
		reads++
		core.Receive(taker, netip.MustParseAddr("192.0.2.12"), now)
		return now
	})
	if reads != 1 || core.State() != Backup {
		t.Fatalf("after the catch-up: %d reads, %v; want the taker read first and the node stepped back", reads, core.State())
	}
}

// TestEstablishedAfterFourIntervals: the node is established (answers
// another router's announcement of the VIP) once it has been the master
// for four advertisement intervals, as its published status says.
func TestEstablishedAfterFourIntervals(t *testing.T) {
	inst, n, t0 := healthyNode()
	core := n.Core()
	n.Apply(t0)
	var took time.Time
	for core.State() != Master {
		if inst.Leading() || inst.Established(core.Deadline().Add(time.Hour)) {
			t.Fatal("leading before it took over")
		}
		took = core.Deadline()
		core.Timeout(took)
	}
	n.Apply(took)
	if !inst.Leading() {
		t.Fatal("the master is not leading")
	}
	if inst.Established(took.Add(4*time.Second - time.Millisecond)) {
		t.Fatal("established before four intervals as master")
	}
	if !inst.Established(took.Add(4 * time.Second)) {
		t.Fatal("not established after four intervals as master")
	}
}

// healthyNode is the node of one instance (192.0.2.11, priority 100,
// advertisements every second) told at t0 that its apiserver is healthy.
func healthyNode() (*Instance, *Node, time.Time) {
	inst := NewInstance(Config{VIPs: []netip.Prefix{netip.MustParsePrefix("192.0.2.100/32")}, VRID: 51, Priority: 100,
		Interval: time.Second}, []Transport{newFakeTransport(netip.MustParseAddr("192.0.2.11"))}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := inst.Node(func(netip.Prefix, bool) {}, t0)
	n.Step(Event{Kind: PrimariesFound, Primaries: []netip.Addr{netip.MustParseAddr("192.0.2.11")}}, func() time.Time { return t0 }, nil)
	n.Core().Health(health.Transition{State: health.Healthy, Changed: true, Settled: true}, t0)
	return inst, n, t0
}

// TestStepPanicsOnAnUnknownKind: an event the node does not know is a bug
// in its driver, not something to skip.
func TestStepPanicsOnAnUnknownKind(t *testing.T) {
	_, n, t0 := healthyNode()
	defer func() {
		if recover() == nil {
			t.Fatal("an unknown event kind did not panic")
		}
	}()
	n.Step(Event{}, func() time.Time { return t0 }, nil)
}

// TestDoubtGoesInBeforeTheQueue: a process that did not run (frozen)
// while its apiserver closed the kept connection and a master fell to the
// fail-open priority takes the doubt before it reads the queued
// advertisements: a healthy, settled backup with PREEMPT does not take
// the VIP from the fail-open master on health it no longer trusts.
func TestDoubtGoesInBeforeTheQueue(t *testing.T) {
	_, n, t0 := healthyNode()
	core := n.Core()
	n.Apply(t0)
	master := netip.MustParseAddr("192.0.2.10")
	adv := func(p uint8) Advertisement {
		return Advertisement{VRID: 51, Priority: p, Interval: Centiseconds(time.Second), Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.100")}}
	}
	clock := func() time.Time { return t0 }
	n.Step(Event{Kind: PreemptReloaded, Preempt: true}, clock, func() time.Time { return t0 })
	n.Step(Event{Kind: Received, Adv: adv(200), Src: master}, clock, nil)
	now := t0.Add(10 * time.Second) // frozen meanwhile: the timer is overdue
	at := func() time.Time { return now }
	read := func() time.Time {
		core.Receive(adv(FailOpenPriority), master, now)
		return now
	}
	n.Step(Event{Kind: HealthChanged, Health: health.Transition{State: health.Healthy, Settled: true, InDoubt: true}}, at, read)
	n.Step(Event{Kind: TimerFired}, at, read)
	if core.State() == Master {
		t.Fatal("took the VIP from a fail-open master while in doubt of its own apiserver")
	}
}

// TestDoubtCarryingAFailureReadsTheQueueFirst: a doubt whose transition
// also says unhealthy (older transitions dropped from a full queue) reaches
// a master that was replaced while it did not run only after the taker's
// queued advertisements: it steps back, and sends no priority 0 beside the
// taker (every backup would bring its takeover forward).
func TestDoubtCarryingAFailureReadsTheQueueFirst(t *testing.T) {
	n, core := masterNode()
	now := core.Deadline().Add(3 * time.Second) // frozen past the backups' wait
	taker := Advertisement{VRID: 51, Priority: 50, Interval: Centiseconds(time.Second), Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.100")}}
	read := func() time.Time {
		core.Receive(taker, netip.MustParseAddr("192.0.2.12"), now)
		return now
	}
	effects := n.Step(Event{Kind: HealthChanged, Health: health.Transition{State: health.Unhealthy, Changed: true, Certain: true, InDoubt: true}},
		func() time.Time { return now }, read)
	for _, e := range effects {
		if e.Kind == Advertise && e.Priority == 0 {
			t.Fatal("resigned beside the taker before reading its advertisements")
		}
	}
	if core.State() == Master {
		t.Fatal("still master after the taker's advertisements")
	}
}

// masterNode is a healthy node that became the master.
func masterNode() (*Node, *Core) {
	_, n, t0 := healthyNode()
	core := n.Core()
	for core.State() != Master {
		core.Timeout(core.Deadline())
	}
	n.Apply(t0)
	return n, core
}
