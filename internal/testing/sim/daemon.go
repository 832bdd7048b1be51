package sim

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/novaedge/cpvip/internal/acd"
	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/l2node"
	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// daemon is one run of novaedge-cpvip on a host: the real node
// (l2node.Node), built as cmd/novaedge-cpvip builds it, with the sim's
// clock and segment in place of the wall clock, sockets and netlink. The
// daemon hands it events as vrrp.Instance.Run does, and keeps its one
// timer at the deadline the node returns.
type daemon struct {
	h       *host
	cfg     *config.Config
	started time.Time
	inst    *vrrp.Instance // the election's instance: Accept, Status
	node    *l2node.Node
	core    *vrrp.Core // the node's election
	vwire   *vrrpWire  // the first family's transport
	judge   *health.Judge
	state   health.State // as of the latest transition
	// healthySince: when state last became Healthy.
	healthySince time.Time
	guard        *acd.Guard
	known        *acd.Known
	rec          *reconcile.Reconciler
	vips         []netip.Prefix
	// wireIndex: the interface the conflict-check wires are open on
	// (acd.Guard.listen reopens them when theirs goes).
	wireIndex int

	// timerAt: when the node's timer is set (the deadline it returned).
	timerAt time.Time
	depth   int // handle's nesting (read during an event)
	// checkIdle: the health checker waits for its next check; else a
	// check started at checkStart waits for its answer. Either is of
	// generation checkGen (an earlier one is void).
	checkIdle  bool
	checkGen   int
	checkStart time.Time
	// kept: the latest answer was an HTTP one, whose connection the
	// checker keeps: only on it does it see the apiserver close.
	kept bool
	// live, resigned: the latest advertisement of the master we follow,
	// and the latest resignation (priority 0) of any: for the invariant
	// takersAlive.
	live, resigned heard

	// frozenUntil: the process does not run until then (freeze.go); what
	// comes meanwhile waits, in order (freeze.go).
	frozenUntil time.Time
	frozenSince time.Time // when it last stopped running
	thawed      time.Time // when it last ran again
	waiting     []*waited
	wireDown    time.Time    // until when the conflict-check wires cannot open
	probes      []netip.Addr // sent in this guard round, in order
}

// start runs a daemon on h with the host's configuration.
func (h *host) start() *daemon {
	s := h.s
	d := &daemon{h: h, cfg: h.cfg, started: s.w.now, vips: h.cfg.VIPAddress}
	h.d, h.goneAt = d, time.Time{}
	log := newLogger(s.w, h.name)
	d.rec = reconcile.New(kernel{h}, d.vips)
	if h.role == ours {
		d.rec.SetLifetime(l2node.Lifetime(h.cfg), func() time.Time { return s.w.now })
	}
	resume, _ := d.rec.Resume(h.role == ours && h.cfg.ConflictCheck)
	if h.role == ours && h.cfg.ConflictCheck {
		d.known = acd.NewKnown(h.cfg.Peers, func() time.Time { return s.w.now }, d.resolve)
		vips := make([]netip.Addr, len(d.vips))
		for i, v := range d.vips {
			vips[i] = v.Addr()
		}
		d.guard = acd.NewGuard(vips, nil, d.known, func() time.Time { return s.w.now },
			log.With("component", "acd"))
		l2node.Guard(d.guard, h.cfg)
		d.known.SetLink(h.index, h.mac)
		for ip, mac := range sortedNeigh(h.neigh) {
			d.known.Neigh(ip, mac)
		}
	}
	conns, primaries := make([]vrrp.Transport, len(d.vips)), make([]netip.Addr, len(d.vips))
	for k := range d.vips {
		conns[k], primaries[k] = &vrrpWire{d: d, k: k, index: h.index}, h.ip
	}
	d.vwire = conns[0].(*vrrpWire)
	d.inst = l2node.Instance(h.cfg, resume && h.role == ours, d.guard, d.known, conns, log.With("component", "vrrp"))
	d.node = l2node.New(l2node.Parts{Config: h.cfg, Interface: "eth0", Inst: d.inst, Rec: d.rec, Guard: d.guard, Known: d.known,
		Announce: d.announce, Log: log, Reported: d.follow}, s.w.now)
	d.core = d.node.Election().Core()
	if d.guard != nil {
		d.attachWires()
	}
	d.handle(vrrp.Event{Kind: vrrp.Started}) // vrrp.Instance.Run: its loop runs, then the primaries are found
	d.handle(vrrp.Event{Kind: vrrp.PrimariesFound, Primaries: primaries})
	d.judge = health.NewJudge(h.cfg.FailThreshold, h.cfg.RiseThreshold)
	if h.role == keepalived {
		d.core.SetPriority(uint8(h.cfg.Priority), "", s.w.now) // no health check
		d.handle(vrrp.Event{Kind: vrrp.QueueRead})             // what it decided carried out
	} else {
		d.after(time.Millisecond, "health check", d.check)
	}
	d.after(vrrp.RefreshEvery, "refresh", d.refresh)
	return d
}

// alive says whether d still runs: events of a daemon that was killed or
// stopped do nothing.
func (d *daemon) alive() bool { return d.h.d == d }

// after schedules do for this daemon run only, once the process runs.
func (d *daemon) after(dt time.Duration, what string, do func()) {
	d.h.s.w.after(dt, d.h.name+" "+what, func() {
		if d.alive() {
			d.when(false, do)
		}
	})
}

// handle hands the node an event, as vrrp.Instance.Run does, and sets its
// timer at the deadline it returns. An advertisement read from the queue
// during another event (read) is handed over at once; the timer is set
// after the outer event, as Run sets it.
func (d *daemon) handle(e vrrp.Event) {
	if !d.alive() {
		return
	}
	d.depth++
	at := d.node.Handle(e, d.clock, d.read)
	if d.depth--; d.depth > 0 {
		return
	}
	d.flushProbes()
	if at.IsZero() || at.Equal(d.timerAt) {
		return
	}
	d.timerAt = at
	d.h.s.w.at(at, d.h.name+" node timer", func() {
		d.when(false, func() {
			if d.alive() && d.timerAt.Equal(at) {
				d.timerAt = time.Time{}
				d.handle(vrrp.Event{Kind: vrrp.TimerFired})
			}
		})
	})
}

// news is the node's feed (l2node.Node.Run's): what the conflict check
// and the identity signal, handed to the node as the news they are.
func (d *daemon) news() {
	if d.guard == nil || !d.alive() {
		return
	}
	for _, c := range []struct {
		ch   <-chan struct{}
		kind l2node.NewsKind
	}{{d.guard.Woken(), l2node.Woken}, {d.guard.Noted(), l2node.Noted}, {d.known.Grew(), l2node.Grew}} {
		select {
		case <-c.ch:
			d.handle(l2node.News{Kind: c.kind}.Event())
		default:
		}
	}
}

// kernelNews is netlink's news of the interface's addresses for the
// reconcile loop.
func (d *daemon) kernelNews(ev reconcile.Event) {
	d.handle(l2node.News{Kind: l2node.Kernel, Netlink: ev}.Event())
}

// announce is one announcement on the segment (l2.Send): it fails while
// the interface is gone; one that goes out for a VIP this node has not
// bound breaks the invariant. Our own address first goes out only from
// novaedge-cpvip.
func (d *daemon) announce(addr netip.Addr) error {
	h := d.h
	if !h.iface {
		return errNoDevice
	}
	if !h.linked() {
		return nil
	}
	if !slices.ContainsFunc(d.vips, func(v netip.Prefix) bool { return v.Addr() == addr }) {
		if h.role == ours {
			h.s.seg.send(frame{kind: self, from: h, mac: h.mac, ip: addr})
		}
		return nil
	}
	if !h.bound(addr) && h.s.inv.announcedUnbound == "" {
		h.s.inv.announcedUnbound = fmt.Sprintf("%s announces %s, which it has not bound", h.name, addr)
	}
	h.s.seg.send(frame{kind: claim, from: h, mac: h.mac, vip: addr})
	return nil
}

// check runs one health check and schedules the next, counted from its
// start (health.Checker.Run).
func (d *daemon) check() {
	d.checkIdle, d.checkStart = false, d.h.s.w.now
	d.ask()
}

// ask sends the check's request; its answer ends the check, unless the
// apiserver closed the connection first (checkNow).
func (d *daemon) ask() {
	d.checkGen++
	gen := d.checkGen
	r, took := d.h.answer(d.cfg.HealthTimeout, d.cfg.HealthHungAfter)
	d.after(took, "health result", func() {
		if d.checkGen != gen {
			return
		}
		d.observe(r)
		next := d.judge.Next(d.cfg.HealthInterval, d.cfg.HealthFastInterval)
		d.checkIdle, d.checkGen = true, d.checkGen+1
		gen := d.checkGen
		d.after(max(0, next-d.h.s.w.now.Sub(d.checkStart)), "health check", func() {
			if d.checkGen == gen {
				d.check()
			}
		})
	})
}

// checkNow is the apiserver closing the kept connection: the checker
// tells the election it is in doubt (health.Judge.Closed); one waiting for
// its next check checks at once, and counts from there (Checker.Run's idle
// wait ends); one checking has its request fail, and tries it again on a
// new connection (the probe's retry).
func (d *daemon) checkNow() {
	if !d.kept {
		return // no connection to close: the next check finds out
	}
	d.h.closeSeen = d.h.api != apiHealthy
	if tr, ok := d.judge.Closed(); ok {
		d.tell(tr)
	}
	if d.checkIdle {
		d.check()
		return
	}
	d.ask()
}

// observe hands a result to the checker's rule and its transition to the
// election (health.Checker.observe, agent.Agent).
func (d *daemon) observe(r health.Result) {
	d.kept = r.Status != 0
	if r.OK() {
		d.h.closeSeen = false
	}
	tr, ok := d.judge.Observe(r)
	if !ok {
		return
	}
	if tr.Changed {
		d.state = tr.State
		if tr.State == health.Healthy {
			d.healthySince = d.h.s.w.now
		}
		d.h.s.w.logf("%s   health %s (%s)", d.h.name, tr.State, r.Reason)
	}
	d.tell(tr)
}

// tell hands a transition to the election (agent.Agent, vrrp.Instance).
func (d *daemon) tell(tr health.Transition) {
	d.handle(vrrp.Event{Kind: vrrp.HealthChanged, Health: tr})
}

// refresh is the instance's periodic interface check (vrrp.RefreshEvery).
func (d *daemon) refresh() {
	d.handle(vrrp.Event{Kind: vrrp.LinkNews})
	d.after(vrrp.RefreshEvery, "refresh", d.refresh)
}

// linkChanged is netlink's news of the interface: the identity learns the
// new MAC (acd.WatchKernel), the node that the link changed, then the
// reconcile loop that it came up; the conflict check's readers open their
// wires on an interface made again.
func (d *daemon) linkChanged() {
	h := d.h
	if d.known != nil && h.iface && !h.s.w.now.Before(h.netlinkDown) {
		d.known.SetLink(h.index, h.mac)
		d.news()
	}
	d.handle(l2node.News{Kind: l2node.LinkChanged}.Event()) // netlink tells of the link first (ifaddr.Watch)
	if h.linked() {
		d.kernelNews(reconcile.LinkUp)
	}
	if d.guard != nil && h.iface && h.index != d.wireIndex {
		d.attachWires()
	}
}

// receive is the daemon's part of a frame: the instance's reader and the
// conflict check's.
func (d *daemon) receive(f frame) {
	d.when(f.kind == advert, func() {
		if d.alive() {
			d.take(f)
		}
	})
}

// take is receive once the process runs.
func (d *daemon) take(f frame) {
	now := d.h.s.w.now
	switch f.kind {
	case advert:
		if !d.inst.Accept(0, f.adv, f.ip) { // the instance's reader
			return
		}
		switch {
		case f.adv.Priority == 0:
			d.resigned = heard{f.ip, now}
		case f.ip == d.core.Master():
			d.live = heard{f.ip, now}
		}
		d.handle(vrrp.Event{Kind: vrrp.Received, Adv: f.adv, Src: f.ip})
	case claim:
		if d.guard != nil && !now.Before(d.wireDown) && d.vwire.index == d.h.index {
			d.guard.Observe(f.vip, acd.Claim{MAC: f.mac, Announced: f.to == nil})
			d.news()
		}
	case malformed:
		// The wire parses frames itself and skips what does not parse
		// (acd.ClaimFrame): nothing reaches the guard.
		if _, ok := acd.ClaimFrame(garbage(f.vip), f.vip); ok {
			panic("a malformed frame parsed as a claim")
		}
	}
}

// resolve asks the kernel to resolve a member (NTF_USE): an ARP request.
func (d *daemon) resolve(ip netip.Addr) {
	h := d.h
	h.s.w.after(0, h.name+" resolve", func() {
		if h.d == d {
			h.s.seg.send(frame{kind: resolve, from: h, mac: h.mac, ip: ip})
		}
	})
}

// attachWires opens the conflict-check wires (acd.Guard.listen).
func (d *daemon) attachWires() {
	for _, v := range d.vips {
		d.guard.Attach(v.Addr(), nil)
	}
	d.news()
	d.after(0, "open wires", d.openWires)
}

func (d *daemon) openWires() {
	if !d.h.iface || d.h.s.w.now.Before(d.wireDown) {
		for _, v := range d.vips {
			d.guard.OpenFailed(v.Addr(), errNoDevice)
			d.news()
		}
		d.after(acd.ReopenEvery, "open wires", d.openWires)
		return
	}
	d.wireIndex = d.h.index
	for _, v := range d.vips {
		d.guard.Attach(v.Addr(), wire{d, v.Addr(), d.h.index})
	}
	d.news()
}

// breakWires makes the wires fail for dt: read errors, no reopening.
func (d *daemon) breakWires(dt time.Duration) {
	if d.guard == nil {
		return
	}
	d.wireDown = d.h.s.w.now.Add(dt)
	d.attachWires()
}

// flushProbes sends the probes the node made, in VIP order.
func (d *daemon) flushProbes() {
	slices.SortFunc(d.probes, func(a, b netip.Addr) int { return a.Compare(b) })
	for _, vip := range d.probes {
		d.h.s.seg.send(frame{kind: probe, from: d.h, mac: d.h.mac, vip: vip})
	}
	d.probes = d.probes[:0]
}

// follow checks the invariants at each state change the election made.
func (d *daemon) follow(e vrrp.Effect) {
	if e.Kind == vrrp.Report {
		d.changed(e.To, e.Reason, e.At)
	}
}

// clock is the daemon's clock: the simulation's.
func (d *daemon) clock() time.Time { return d.h.s.w.now }

// vrrpWire is the instance's transport of the k-th VIP on the segment
// (vrrp.Conn): only the first family's advertisements are modelled, the
// ones the elections read.
type vrrpWire struct {
	d     *daemon
	k     int
	index int // the interface it is open on
}

func (v *vrrpWire) Primary() (netip.Addr, error) { return v.d.h.ip, nil }

// Send advertises to each unicast peer or to the group.
func (v *vrrpWire) Send(a *vrrp.Advertisement, _ netip.Addr) error {
	d := v.d
	if v.k > 0 || !d.alive() {
		return nil
	}
	f := frame{kind: advert, from: d.h, mac: d.h.mac, ip: d.h.ip, adv: *a}
	if len(d.cfg.Peers) == 0 {
		d.h.s.seg.send(f)
		return nil
	}
	for _, p := range d.cfg.PeersOf(false) {
		for _, o := range d.h.s.group {
			if o.ip == p {
				f.to = o
				d.h.s.seg.send(f)
			}
		}
	}
	return nil
}

func (v *vrrpWire) Receive() (vrrp.Advertisement, netip.Addr, error) {
	return vrrp.Advertisement{}, netip.Addr{}, net.ErrClosed // the segment hands frames to receive
}

// Refresh follows the interface made again (a new index); vrrp.ErrGone
// while it does not exist.
func (v *vrrpWire) Refresh() (bool, error) {
	switch h := v.d.h; {
	case !h.iface:
		return false, vrrp.ErrGone
	case h.index != v.index:
		v.index = h.index
		return true, nil
	}
	return false, nil
}

func (v *vrrpWire) Carrier() (bool, error) {
	if !v.d.h.iface {
		return false, errNoDevice
	}
	return v.d.h.linked(), nil
}
func (v *vrrpWire) Pending() bool { return false }
func (v *vrrpWire) Close() error  { return nil }

// heard is an advertisement heard from a master, and when.
type heard struct {
	from netip.Addr
	at   time.Time
}

// releasing says whether ip's daemon resigned with fail open off and is
// not master again: it lets the VIP go after five intervals, and a failing
// backup takes over before that, at the master down interval from the
// first resignation (docs/vrrp.md), not after it, a gap.
func (d *daemon) releasing(ip netip.Addr) bool {
	for _, h := range d.h.s.group {
		if h.ip == ip && h.d != nil {
			return !h.d.cfg.FailOpen && h.d.core.State() != vrrp.Master
		}
	}
	return false
}

// aliveBefore returns a master heard alive within win of now, resigned or
// not, that a node which saw its own apiserver die must not take the VIP
// from; false when none.
func (d *daemon) aliveBefore(now time.Time, win time.Duration) (heard, bool) {
	if now.Sub(d.live.at) <= win {
		return d.live, true
	}
	if now.Sub(d.resigned.at) <= win && !d.releasing(d.resigned.from) {
		return d.resigned, true
	}
	return heard{}, false
}

// changed checks the invariants a takeover must keep.
func (d *daemon) changed(to vrrp.State, why string, now time.Time) {
	if to != vrrp.Master {
		return
	}
	inv := &d.h.s.inv
	if d.h.role == ours && d.core.Took().NeedsSettled() && !d.judge.Settled() && inv.unsettledTaker == "" { // keepalived has no health
		inv.unsettledTaker = fmt.Sprintf("%s took over (%s) while %s, its latest checks not all passed", d.h.name, why, d.state)
	}
	if m, ok := d.aliveBefore(now, d.cfg.AdvertInterval+50*time.Millisecond); ok && d.h.role == ours && d.h.closeSeen &&
		d.core.Took() != vrrp.NoTakeover && inv.deadTaker == "" {
		inv.deadTaker = fmt.Sprintf("%s took over (%s) after its checker saw its apiserver (%s) close the connection, %s advertising %v before",
			d.h.name, why, d.h.api, m.from, now.Sub(m.at))
	}
	if strings.HasPrefix(why, "resumed") && inv.resumedBeside == "" {
		for _, h := range d.h.s.group {
			seg := d.h.s.seg
			hears := seg.loss == 0 && seg.side[h] == seg.side[d.h] && h.linked() && d.h.linked() && now.Sub(seg.faultAt) >= d.cfg.AdvertInterval
			if h != d.h && hears && h.d != nil && !h.d.frozen() && h.d.inst.Leading() && now.Sub(h.d.inst.Status().Changed) >= d.cfg.AdvertInterval {
				inv.resumedBeside = fmt.Sprintf("%s resumed as master while %s had been master for %v", d.h.name, h.name, now.Sub(h.d.inst.Status().Changed))
			}
		}
	}
}

// wire is a conflict-check wire on the segment (acd.Wire).
type wire struct {
	d     *daemon
	vip   netip.Addr
	index int
}

var errNoCarrier = errors.New("network is down")

func (w wire) Probe() error {
	if !w.d.h.linked() || w.d.h.index != w.index {
		return errNoCarrier
	}
	w.d.probes = append(w.d.probes, w.vip)
	return nil
}
func (w wire) Read() (acd.Claim, error) { return acd.Claim{}, net.ErrClosed }
func (w wire) Close() error             { return nil }

// kernel is the host's interface addresses as the reconciler sees them:
// those of the interface that exists now.
type kernel struct{ h *host }

var errNoDevice = errors.New("no such device")

func (k kernel) List() ([]netip.Prefix, error) {
	if !k.h.iface {
		return nil, errNoDevice
	}
	return k.h.addrs.List()
}
func (k kernel) Add(p netip.Prefix, lifetime time.Duration) error {
	if !k.h.iface {
		return errNoDevice
	}
	k.h.expire(p, lifetime)
	return k.h.addrs.Add(p, lifetime)
}
func (k kernel) Del(p netip.Prefix) error {
	if !k.h.iface {
		return errNoDevice
	}
	delete(k.h.lapse, p)
	return k.h.addrs.Del(p)
}

// tuner is the election as a reload retunes it (l2node.ElectionTuner):
// each setting an event, as the instance's Run hands it over.
type tuner struct{ d *daemon }

func (t tuner) SetPriority(p uint8) {
	t.d.handle(vrrp.Event{Kind: vrrp.PriorityReloaded, Priority: p})
}
func (t tuner) SetPreempt(on bool) { t.d.handle(vrrp.Event{Kind: vrrp.PreemptReloaded, Preempt: on}) }
func (t tuner) SetSettleWithin(d time.Duration) {
	t.d.handle(vrrp.Event{Kind: vrrp.SettleReloaded, Settle: d})
}
