package vrrp

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/quietio"
)

// Transport is what an Instance needs from the network (Conn in production).
type Transport interface {
	Primary() (netip.Addr, error)
	Send(a *Advertisement, src netip.Addr) error
	Receive() (Advertisement, netip.Addr, error)
	// Refresh follows the interface if it was deleted and created again,
	// and reports whether it did; ErrGone while it does not exist.
	Refresh() (bool, error)
	// Carrier reports whether the interface is up with carrier.
	Carrier() (bool, error)
	// Pending says whether an advertisement may wait to be received: the
	// kernel queued one, or Receive took one and was not called again.
	Pending() bool
	Close() error
}

// RefreshEvery is how often the instance checks its interface is still the same one.
const RefreshEvery = time.Second

// Config is one instance: one election for the VIPs, one per address
// family, so that one node holds them all. The first VIP's family decides:
// its advertisements drive the state machine; the other family's are sent
// alike (valid VRRPv3 for that family's listeners) and otherwise ignored.
type Config struct {
	VIPs     []netip.Prefix
	VRID     uint8
	Priority uint8 // ours while the apiserver is healthy (Core.Health)
	// FailOpen: an unhealthy node that has been healthy since it started
	// stays in the election with FailOpenPriority (ElectionPriority).
	FailOpen bool
	Interval time.Duration
	Sends    int // advertisements per Interval (Params.Sends)
	Preempt  bool
	// Resume: the VIPs were bound on the interface at start (one may be
	// missing: the conflict check kept it down), left by an earlier run
	// that was killed. They stay until the first health
	// verdict: healthy resumes as master at once (Machine.Resume), anything
	// else — unhealthy, another master heard, no verdict within
	// resumeWait — removes them as a fresh start does.
	Resume bool
	// Heard, if set, sees the source of every advertisement of our group
	// (both families): the routers of this election, whose answers for the
	// VIP are no conflict (internal/acd's Known). It must not block.
	Heard func(src netip.Addr, interval time.Duration)
	// ServedWait is how long a backup waits for a silent master whose host
	// still answers for the VIPs (Params.ServedWait). It asks with Ask
	// (probe the VIPs now; it must not block), and hears the answers
	// through Node.Served. Without Ask, no wait.
	ServedWait time.Duration
	Ask        func()
	// SettleWithin bounds how long settling holds a healthy backup back
	// from a fail-open master (Params.SettleWithin; 0: no bound).
	SettleWithin time.Duration
}

// Advertisement is the advertisement of priority for the k-th VIP (one
// per address family).
func (c Config) Advertisement(priority uint8, k int) Advertisement {
	return Advertisement{VRID: c.VRID, Priority: priority, Interval: Centiseconds(c.Interval), Addresses: []netip.Addr{c.VIPs[k].Addr()}}
}

// Status is a snapshot of an instance for /status and metrics.
type Status struct {
	VIP        netip.Prefix
	State      State
	Priority   uint8 // ours; 0 = not a candidate
	Master     netip.Addr
	Primary    netip.Addr
	Sent       uint64
	Received   uint64
	SendErrors uint64
	Drops      map[Reason]uint64
	Foreign    []Foreign // other groups heard on our VRID
	Changed    time.Time
	Reason     string
	Failing    string // why the apiserver is unhealthy; empty while it is healthy
}

// Instance runs the election for the VIPs. Run owns the state machine;
// other goroutines talk to it through Health, the setters and Status.
type Instance struct {
	cfg      Config
	conns    []Transport // one per VIP, same order
	log      *slog.Logger
	health   chan health.Transition // the latest not yet taken (Health)
	base     chan uint8             // Priority, reloaded
	preempt  chan bool
	settle   chan time.Duration // SettleWithin, reloaded
	asking   atomic.Bool        // Ask was called and no answer has ended it (answers)
	askedAt  atomic.Int64       // when Ask was last called (unix ns): an answer seen before is not its answer
	drops    Drops
	foreign  foreignGroups
	sent     atomic.Uint64
	received atomic.Uint64
	sendErrs atomic.Uint64

	primaries []atomic.Pointer[netip.Addr] // our source address per family, read by the readers
	// drainAtMost: how long a due timer waits for queued advertisements
	// (drain): a quarter of the time between two advertisements at most.
	drainAtMost time.Duration

	mu     sync.Mutex // guards status
	status Status
}

// reannounceEvery limits re-announcements caused by a competing master.
const reannounceEvery = time.Second

// reannounceAgain is when a master that heard a weaker master announces the
// VIP once more. When two backups time out at the same moment, both become
// master and both announce; the loser's gratuitous ARP, sent as it binds the
// VIP, can arrive after our immediate re-announcement and would keep the
// neighbours on a MAC that no longer has the VIP until our next repeat, 1.1 s
// later.
const reannounceAgain = 100 * time.Millisecond

// handoverGrace is how long a resigned master keeps the VIP after the new
// master's first advertisement, for that master's gratuitous ARP / NA to
// reach the neighbours.
const handoverGrace = 100 * time.Millisecond

// NewInstance returns an instance that is not yet a candidate; conns has
// one transport per VIP of cfg, of its family.
func NewInstance(cfg Config, conns []Transport, log *slog.Logger) *Instance {
	if cfg.Ask == nil {
		cfg.ServedWait = 0
	}
	return &Instance{cfg: cfg, conns: conns, log: log, health: make(chan health.Transition, healthQueue), base: make(chan uint8, 1),
		preempt: make(chan bool, 1), settle: make(chan time.Duration, 1),
		primaries: make([]atomic.Pointer[netip.Addr], len(conns)), status: Status{State: Initialize},
		drainAtMost: min(drainAtMost, cfg.Interval/time.Duration(max(1, cfg.Sends))/4)}
}

// healthQueue is how many health transitions wait for Run at most: a
// check's transition comes every 100 ms at the fastest, and Run takes each
// at once once the primaries are found, unless the process does not run.
const healthQueue = 16

// Health hands the core a transition of the health checker (Core.Health),
// in order. Should healthQueue wait already, the oldest is dropped: the
// core acts on the state, which the newer ones carry.
func (i *Instance) Health(tr health.Transition) {
	for {
		select {
		case i.health <- tr:
			return
		default:
		}
		select {
		case <-i.health:
		default:
		}
	}
}

// SetPriority changes our priority while healthy (a reload, Core.SetBase);
// only the latest value counts.
func (i *Instance) SetPriority(p uint8) { latest(i.base, p) }

// latest puts v on ch, a channel of one, in place of a value not yet taken.
func latest[T any](ch chan T, v T) {
	select {
	case <-ch:
	default:
	}
	ch <- v
}

// SetPreempt changes Preempt; only the latest value counts.
func (i *Instance) SetPreempt(on bool) { latest(i.preempt, on) }

// SetSettleWithin changes SettleWithin; only the latest value counts.
func (i *Instance) SetSettleWithin(d time.Duration) { latest(i.settle, d) }

// answers says whether an answer seen at at answers the question asked:
// one seen after it was asked, while it is asked. A router's ends the
// asking; a stranger's (a conflict on one family of a dual-stack VIP, say)
// does not, so the master's host answering for the other family still
// counts.
func (i *Instance) answers(member bool, at time.Time) bool {
	switch {
	case at.UnixNano() < i.askedAt.Load():
		return false // seen before the question: not its answer
	case member && !i.asking.Swap(false), !member && !i.asking.Load():
		return false // not asked: the routers' answers to every backup's own probes, each second
	}
	return true
}

// Primary returns our source address of family's address family (invalid
// before Run has found it, or for a family we do not advertise in).
func (i *Instance) Primary(family netip.Addr) netip.Addr {
	for k, vip := range i.cfg.VIPs {
		if vip.Addr().Is4() == family.Is4() {
			if p := i.primaries[k].Load(); p != nil {
				return *p
			}
		}
	}
	return netip.Addr{}
}

// FailOpen says whether the node holds the VIP only because no node is
// healthy (master with the fail-open priority), and why it is unhealthy.
func (s Status) FailOpen() (bool, string) {
	return s.State == Master && s.Priority == FailOpenPriority, s.Failing
}

// Status returns a snapshot.
func (i *Instance) Status() Status {
	i.mu.Lock()
	s := i.status
	i.mu.Unlock()
	s.Sent, s.Received, s.SendErrors = i.sent.Load(), i.received.Load(), i.sendErrs.Load()
	s.Drops = i.drops.Snapshot()
	s.Foreign = i.foreign.snapshot()
	return s
}

// Leading says whether this node is the group's master now.
func (i *Instance) Leading() bool {
	state, _ := i.state()
	return state == Master
}

// Established says whether this node is the group's master at now and has
// been for a while (Established).
func (i *Instance) Established(now time.Time) bool {
	state, since := i.state()
	return state == Master && Established(now.Sub(since), i.cfg.Interval)
}

// state is the election's state and when it last changed.
func (i *Instance) state() (State, time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.status.State, i.status.Changed
}

type packet struct {
	adv Advertisement
	src netip.Addr
}

// Run drives d (the election, or the node around it) until ctx ends: the
// transports' readers, the interface's news (RefreshEvery), health,
// reloads, what feed brings (Beside events of d's own) and one timer at
// d's deadline. The election's events wait until the transports have
// their source addresses (PrimariesFound; the readers start after it);
// what feed brings and d's timer run from the start (Started). On return d has
// shut down (ShutDown: a master sent priority 0) and the transports are
// closed. Every decision is d's; Run feeds it the wall clock, the network
// and the interface.
func (i *Instance) Run(ctx context.Context, d Driven, feed <-chan Event) {
	found, waited := make(chan []netip.Addr, 1), make(chan struct{})
	go func() {
		defer close(waited)
		ps := make([]netip.Addr, len(i.conns))
		for k := range i.conns {
			if ps[k] = i.waitPrimary(ctx, i.conns[k]); ctx.Err() != nil {
				return
			}
		}
		found <- ps
	}()
	packets := make(chan packet, 16)
	stop := make(chan struct{})
	var readers sync.WaitGroup
	read := func() time.Time { i.drain(packets, d); return time.Now() }
	// Timers on timerfds (quietio.Timer): a runtime timer costs the idle
	// daemon about six wake-ups each time it fires, and a master fires one
	// for every advertisement.
	timer := quietio.NewTimer(time.Hour)
	defer timer.Close()
	refresh := quietio.NewTicker(RefreshEvery)
	defer refresh.Close()
	// The election's inputs, nil until the primaries are found.
	var ticks <-chan struct{}
	var healths <-chan health.Transition
	var bases <-chan uint8
	var preempts <-chan bool
	var settles <-chan time.Duration
	next := d.Handle(Event{Kind: Started}, time.Now, read)
	for {
		resetTimer(timer, next)
		var e Event
		select {
		case ps := <-found:
			found = nil
			if ctx.Err() != nil {
				continue // ShutDown next
			}
			next = d.Handle(Event{Kind: PrimariesFound, Primaries: ps}, time.Now, read)
			for k := range i.conns { // once the primaries are stored: Accept needs them
				readers.Add(1)
				go func() { defer readers.Done(); i.read(k, packets, stop) }()
			}
			ticks, healths, bases, preempts, settles = refresh.C(), i.health, i.base, i.preempt, i.settle
			continue
		case <-ticks:
			e = Event{Kind: LinkNews}
		case <-ctx.Done():
			d.Handle(Event{Kind: ShutDown}, time.Now, read)
			close(stop)
			<-waited // it asks the transports for their primaries
			for _, c := range i.conns {
				c.Close()
			}
			readers.Wait()
			return
		case on := <-preempts:
			e = Event{Kind: PreemptReloaded, Preempt: on}
		case s := <-settles:
			e = Event{Kind: SettleReloaded, Settle: s}
		case tr := <-healths:
			e = Event{Kind: HealthChanged, Health: tr}
		case p := <-bases:
			e = Event{Kind: PriorityReloaded, Priority: p}
		case p := <-packets:
			e = Event{Kind: Received, Adv: p.adv, Src: p.src}
		case e = <-feed:
		case <-timer.C(): // or a tick from before the latest reset: d acts only on what is due
			e = Event{Kind: TimerFired}
		}
		next = d.Handle(e, time.Now, read)
	}
}

// drainAtMost bounds how long a due timer waits for the advertisements
// queued before it: reading them takes microseconds once the reader runs;
// a reader that cannot (a failing socket) must not stop the timers.
const drainAtMost = 20 * time.Millisecond

// drain hands d every advertisement the kernel queued (the Node's
// Reader): the readers' channel, and what the first transport's socket
// still holds (Pending), waiting for its reader at most drainAtMost. Only
// the first transport's advertisements reach the election. Each is an
// event of its own (Received), as one the loop received.
func (i *Instance) drain(packets <-chan packet, d Driven) {
	noRead := func() time.Time { return time.Now() } // each a Received event: nothing more to read
	deadline := time.Now().Add(i.drainAtMost)
	for {
		if !i.conns[0].Pending() {
			// Pending reads false only after the reader handed over what
			// it took: the channel holds the rest.
			for {
				select {
				case p := <-packets:
					d.Handle(Event{Kind: Received, Adv: p.adv, Src: p.src}, time.Now, noRead)
					continue
				default:
				}
				return
			}
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return
		}
		select {
		case p := <-packets:
			d.Handle(Event{Kind: Received, Adv: p.adv, Src: p.src}, time.Now, noRead)
		case <-time.After(min(wait, 200*time.Microsecond)):
		}
	}
}

// waitPrimary waits until the interface has an address to send from.
// After link up, the IPv6 link-local address needs about a second of
// duplicate address detection.
func (i *Instance) waitPrimary(ctx context.Context, conn Transport) netip.Addr {
	for tries := 0; ; tries++ {
		p, err := conn.Primary()
		if err == nil {
			return p
		}
		if tries%50 == 0 {
			i.log.Warn("Waiting for an address to send VRRP advertisements from", "error", err)
		}
		select {
		case <-ctx.Done():
			return netip.Addr{}
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// read receives on transport k. Only the first family's advertisements
// reach the machine; the others are counted and dropped.
func (i *Instance) read(k int, out chan<- packet, stop <-chan struct{}) {
	for {
		a, src, err := i.conns[k].Receive()
		var r Reason
		switch {
		case errors.As(err, &r):
			i.drops.Add(r)
			continue
		case errors.Is(err, net.ErrClosed):
			return
		case err != nil:
			i.log.Warn("Receiving VRRP advertisement failed", "error", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if !i.Accept(k, a, src) || k > 0 {
			continue
		}
		select {
		case out <- packet{adv: a, src: src}:
		case <-stop:
			return
		}
	}
}

// Accept says whether a, received from src on transport k, is this
// election's (Config.Drop), counting what it drops, and tells Heard of
// our group's routers. The readers ask it; it is safe from any goroutine.
func (i *Instance) Accept(k int, a Advertisement, src netip.Addr) bool {
	self := i.primaries[k].Load()
	if self == nil {
		return false // before PrimariesFound: no election to hand it to yet
	}
	switch r := i.cfg.Drop(a, src, *self, k); r {
	case "":
	case DropForeign:
		i.dropForeign(a, src)
		return false
	default:
		i.drops.Add(r)
		return false
	}
	i.received.Add(1)
	if i.cfg.Heard != nil {
		i.cfg.Heard(src, a.IntervalDuration())
	}
	return true
}

// dropForeign drops an advertisement of another group on our VRID, logging
// its source once.
func (i *Instance) dropForeign(a Advertisement, src netip.Addr) {
	i.drops.Add(DropForeign)
	if i.foreign.add(src, a.Addresses) {
		i.log.Warn("Another VRRP group uses our VRID on this segment: its advertisements are ignored",
			"vrid", a.VRID, "source", src, "addresses", a.Addresses, "priority", a.Priority,
			"remedy", "give each group a VRID unused on the segment (NOVAEDGE_CP_VIP_VRID)")
	}
}

// send advertises priority for every VIP, each over its family's
// transport, once its source address is found.
func (i *Instance) send(priority uint8) {
	for k, conn := range i.conns {
		src := i.primaries[k].Load()
		if src == nil {
			continue
		}
		adv := i.cfg.Advertisement(priority, k)
		if err := conn.Send(&adv, *src); err != nil {
			if i.sendErrs.Add(1) == 1 || i.sendErrs.Load()%100 == 0 {
				i.log.Warn("Sending VRRP advertisement failed", "error", err, "failures", i.sendErrs.Load())
			}
			continue
		}
		i.sent.Add(1)
	}
}

func (i *Instance) setStatus(f func(*Status)) {
	i.mu.Lock()
	f(&i.status)
	i.mu.Unlock()
}

// resetTimer makes t fire at deadline, or not at all for the zero time.
func resetTimer(t *quietio.Timer, deadline time.Time) {
	if deadline.IsZero() {
		t.Stop()
		return
	}
	t.Reset(time.Until(deadline))
}
