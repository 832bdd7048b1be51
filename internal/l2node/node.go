package l2node

import (
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/novaedge/cpvip/internal/acd"
	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/l2"
	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// Node is an L2 node's decisions in one goroutine: the election
// (vrrp.Node), the conflict check's rounds and notes (acd.Guard), the
// bind decision's passes (reconcile.Loop) and the announcements (a
// l2.Burst a VIP). It takes events with the clock (Handle: vrrp.Driven)
// and returns when it must be woken next; nothing of it runs in another
// goroutine, and it waits on none. vrrp.Instance.Run drives it with the wall
// clock, the sockets and netlink (Run); the simulation
// (internal/testing/sim) drives the same Node with its virtual clock and
// segment.
type Node struct {
	inst     *vrrp.Instance
	elect    *vrrp.Node
	rec      *reconcile.Reconciler
	loop     *reconcile.Loop
	guard    *acd.Guard // nil without the conflict check
	known    *acd.Known // with guard
	announce func(netip.Addr) error
	log      *slog.Logger // the announcements' and the loop's
	root     *slog.Logger // the daemon's: the election's word
	iface    string

	// decided, if set, sees every decision of the election (the agent's
	// journal); reported, each of its effects (the simulation's checks).
	decided  func(vip netip.Prefix, hold bool)
	reported func(vrrp.Effect)
	kernel   <-chan reconcile.Event // Parts.Kernel
	link     <-chan struct{}        // Parts.Link

	// repeat and refresh are GARP_REPEAT and GARP_REFRESH, changed by a
	// reload from another goroutine (SetGARP).
	repeat, refresh atomic.Int64

	// What Handle was given, for the parts it calls during the event.
	now   func() time.Time
	read  vrrp.Reader
	depth int // Handle's nesting: an event read from the kernel's queue during another

	due    due
	bursts map[netip.Addr]*announcing
	held   map[netip.Prefix]bool // the election's latest word (the logs say a change)
	// started: the election's primaries are found (PrimariesFound); before,
	// the reconcile passes, the announcements and the election's timer (a
	// resume's wait: a VIP kept from a killed run goes when it ends) run,
	// the election's other events and the conflict check wait
	// (vrrp.Instance.Run).
	started    bool
	shutDown   bool
	Sent       atomic.Uint64 // single announcements sent
	SendFailed atomic.Uint64 // single announcements that failed every try
}

// due is what the node has to do, and when: the parts' timers as data.
type due struct {
	pass     bool      // a reconcile pass (the election's word, a verdict, the kernel's news)
	renew    bool      // the lifetimes' renewal is due (a pass if it cannot do alone)
	round    bool      // a round of the conflict check
	lapsed   bool      // a pass let a VIP go whose lifetime ran out
	renewAt  time.Time // the lifetimes' renewal (reconcile.Reconciler.RenewAt)
	roundAt  time.Time // the conflict check's next round (acd.Guard.Round)
	periodAt time.Time // the periodic pass (reconcile.Period)
}

// Parts are what a node is made of; its driver makes them: cmd/novaedge-cpvip
// over sockets and netlink, the simulation over its segment.
type Parts struct {
	Config    *config.Config
	Interface string                // the VIPs' interface (Config's, or the one detected)
	Inst      *vrrp.Instance        // Instance's
	Rec       *reconcile.Reconciler // its lifetime set, Resume asked
	Guard     *acd.Guard            // nil: no conflict check
	Known     *acd.Known            // with Guard
	// Announce sends one announcement of addr on the interface (l2.Send):
	// a VIP, or first our own address of its family.
	Announce func(addr netip.Addr) error
	Log      *slog.Logger
	// Reported, if set, sees each effect of the election.
	Reported func(vrrp.Effect)
	// Kernel and Link are netlink's news of the interface for Run:
	// its addresses and link state (the reconcile loop's), and the link
	// itself changing (the election's and the conflict check's). Nil: none.
	Kernel <-chan reconcile.Event
	Link   <-chan struct{}
}

// New returns the node made of p at now. Its first reconcile pass runs at
// its first event (a stale VIP of an earlier run goes; one kept, found
// bound at start, has its lifetime renewal set); its conflict
// check (if any) starts once the election's primaries are found, as the
// election's readers do.
func New(p Parts, now time.Time) *Node {
	n := &Node{inst: p.Inst, rec: p.Rec, root: p.Log,
		guard: p.Guard, known: p.Known, announce: p.Announce, log: p.Log.With("component", "l2", "interface", p.Interface),
		iface: p.Interface, reported: p.Reported, kernel: p.Kernel, link: p.Link, bursts: map[netip.Addr]*announcing{}, held: map[netip.Prefix]bool{},
		now: func() time.Time { return now }, read: func() time.Time { return now }}
	n.SetGARP(p.Config.GARPRepeat, p.Config.GARPRefresh)
	if n.guard != nil {
		n.rec.SetCheck(n.guard)
	}
	n.loop = reconcile.NewLoop(n.rec, nil, reconcile.Period,
		l2.Hooks(burstHooks{n}, n.log, n.iface, func() { n.due.lapsed = true }))
	n.due.pass, n.due.periodAt = true, now.Add(reconcile.Period)
	n.elect = p.Inst.Node(n.decide, now)
	n.report(n.elect.Apply(now))
	return n
}

// Instance returns the election of cfg over conns, one transport per VIP
// (its family). resume: the VIPs were found bound at start. With the
// conflict check (guard, known), a backup whose master went silent asks
// the guard whether the master's host still answers (ProbeNow), and each
// advertisement of our group makes its source a member (Heard).
func Instance(cfg *config.Config, resume bool, guard *acd.Guard, known *acd.Known, conns []vrrp.Transport, log *slog.Logger) *vrrp.Instance {
	vcfg := Election(cfg, resume, guard != nil)
	if guard != nil {
		vcfg.Ask = guard.ProbeNow
		vcfg.Heard = func(src netip.Addr, interval time.Duration) { Heard(known, cfg, src, interval) }
	}
	return vrrp.NewInstance(vcfg, conns, log)
}

// Election is the node's election, for what its driver reads of it (the
// simulation's checks: its core's state, priority, master, cause).
func (n *Node) Election() *vrrp.Node { return n.elect }

// SetGARP changes the announcements per takeover and the refresh period (a
// reload, from any goroutine): they count from the next announcement, a
// running refresh included.
func (n *Node) SetGARP(repeat int, refresh time.Duration) {
	n.repeat.Store(int64(repeat))
	n.refresh.Store(int64(refresh))
}

// Handle takes one event (vrrp.Driven): the election's own, or the news
// beside it (vrrp.Beside with a News). What the event makes due runs
// before it returns (flush); it returns when the node must be woken next
// (TimerFired), zero for never. An event read from the kernel's queue
// during another (the election catching up: read) is handed to the
// election at once; what it makes due runs with the outer event's.
func (n *Node) Handle(e vrrp.Event, now func() time.Time, read vrrp.Reader) time.Time {
	if n.shutDown {
		return time.Time{}
	}
	outer := n.depth == 0
	if outer {
		n.now, n.read = now, read
	}
	n.depth++
	defer func() { n.depth-- }()
	switch e.Kind {
	case vrrp.TimerFired:
		n.timers(now())
	case vrrp.Started:
	case vrrp.PrimariesFound:
		n.start(e)
	case vrrp.Beside:
		n.beside(e.Beside.(News))
	case vrrp.ShutDown:
		n.step(e)
		n.stop()
		return time.Time{}
	default:
		n.step(e)
	}
	if outer {
		n.flush()
	}
	return n.deadline()
}

// step hands the election an event.
func (n *Node) step(e vrrp.Event) { n.report(n.elect.Step(e, n.now, n.read)) }

func (n *Node) report(effects []vrrp.Effect) {
	if n.reported == nil {
		return
	}
	for _, e := range effects {
		n.reported(e)
	}
}

// start takes the election's primaries: its events run from now on, and
// the conflict check starts (its first round at once).
func (n *Node) start(e vrrp.Event) {
	n.started = true
	if n.guard != nil {
		n.guard.Start()
		n.due.round = true
	}
	n.step(e)
}

// timers marks what is due at now; the election's timer runs at once.
func (n *Node) timers(now time.Time) {
	if at := n.elect.Core().Deadline(); !at.IsZero() && !now.Before(at) {
		n.step(vrrp.Event{Kind: vrrp.TimerFired})
	}
	d := &n.due
	if !d.roundAt.IsZero() && !now.Before(d.roundAt) {
		d.round, d.roundAt = true, time.Time{}
	}
	if !d.renewAt.IsZero() && !now.Before(d.renewAt) {
		d.renew, d.renewAt = true, time.Time{}
	}
	if !now.Before(d.periodAt) {
		d.pass, d.periodAt = true, now.Add(reconcile.Period)
	}
}

// flush runs what is due, in this order, until nothing is: the conflict
// check's news and notes (a verdict that changed, an announcement to make
// again, an answer for the election), its round, a reconcile pass (or the
// lifetimes' renewal alone), a lapsed VIP handed to the election, the
// announcements due.
func (n *Node) flush() {
	for {
		n.listen()
		d := &n.due
		switch {
		case d.round && n.started:
			d.round = false
			d.roundAt = n.guard.Round()
		case d.pass || d.renew:
			renewing := d.renew && !d.pass
			d.pass, d.renew = false, false
			d.renewAt = n.loop.Wake(renewing)
		case d.lapsed && n.started:
			d.lapsed = false
			n.step(vrrp.Event{Kind: vrrp.LifetimeLapsed})
		case n.announceDue(n.now()):
		default:
			return
		}
	}
}

// deadline is when the node must be woken next: the soonest of its
// parts' timers.
func (n *Node) deadline() time.Time {
	next := n.elect.Core().Deadline()
	soonest := func(at time.Time) {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	soonest(n.due.roundAt)
	soonest(n.due.renewAt)
	soonest(n.due.periodAt)
	for _, a := range n.bursts {
		soonest(a.due)
	}
	return next
}

// decide is the election's word on vip: the reconcile loop binds or
// releases it at the pass it makes due.
func (n *Node) decide(vip netip.Prefix, hold bool) {
	if hold && !n.held[vip] { // not for a re-announcement of a VIP held already
		if keeping, why := n.inst.Status().FailOpen(); keeping {
			n.root.Warn("No node is healthy: keeping the VIP (fail open)", "vip", vip, "vrrp", "master", "reason", why)
		} else {
			n.root.Info("API server is healthy, binding VIP", "vip", vip, "vrrp", "master")
		}
	}
	n.held[vip] = hold
	if hold {
		n.loop.Hold(vip)
	} else {
		n.loop.Set(vip, false)
	}
	n.due.pass = true
	if n.decided != nil {
		n.decided(vip, hold)
	}
}

// stop is the node shutting down, the election resigned: no VIP is
// announced any more and every VIP is released.
func (n *Node) stop() {
	n.shutDown = true
	clear(n.bursts)
	n.loop.Release()
}
