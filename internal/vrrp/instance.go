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
)

// Transport is what an Instance needs from the network (Conn in production).
type Transport interface {
	Primary() (netip.Addr, error)
	Send(a *Advertisement, src netip.Addr) error
	Receive(buf []byte) (Advertisement, netip.Addr, error)
	// Refresh follows the interface if it was deleted and created again,
	// and reports whether it did.
	Refresh() (bool, error)
	Close() error
}

// refreshEvery is how often the instance checks its interface is still the same one.
const refreshEvery = time.Second

// Config is one instance: one VIP of one address family.
type Config struct {
	VIP      netip.Prefix
	VRID     uint8
	Priority uint8
	Interval time.Duration
	Preempt  bool
}

// Status is a snapshot of an instance for /status and metrics.
type Status struct {
	VIP        netip.Prefix
	State      State
	Master     netip.Addr
	Primary    netip.Addr
	Sent       uint64
	Received   uint64
	SendErrors uint64
	Drops      map[Reason]uint64
	Changed    time.Time
	Reason     string
}

// Instance runs the election for one VIP. Run owns the state machine; other
// goroutines talk to it through SetCandidate and Status.
type Instance struct {
	cfg       Config
	conn      Transport
	log       *slog.Logger
	m         *Machine
	candidate chan bool
	drops     Drops
	sent      atomic.Uint64
	received  atomic.Uint64
	sendErrs  atomic.Uint64

	lastReannounce time.Time                  // Run's goroutine only
	announceAgain  bool                       // Run's goroutine only: start the again timer
	handingOver    bool                       // Run's goroutine only: resigned, the VIP still bound
	primary        atomic.Pointer[netip.Addr] // our source address, read by the reader goroutine

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

// handoverWait is how long a master that resigned keeps the VIP bound while
// no other master announces itself: a master-down interval and a little
// more, after which no backup will take over.
func (i *Instance) handoverWait() time.Duration { return 4 * i.cfg.Interval }

// handoverGrace is how long a resigned master keeps the VIP after the new
// master's first advertisement, for that master's gratuitous ARP / NA to
// reach the neighbours.
const handoverGrace = 100 * time.Millisecond

// NewInstance returns an instance that is not yet a candidate.
func NewInstance(cfg Config, conn Transport, log *slog.Logger) *Instance {
	return &Instance{cfg: cfg, conn: conn, log: log, candidate: make(chan bool, 1),
		status: Status{VIP: cfg.VIP, State: Initialize}}
}

// SetCandidate says whether this node may hold the VIP (its apiserver is
// healthy). Only the latest value counts.
func (i *Instance) SetCandidate(ok bool) {
	select {
	case <-i.candidate:
	default:
	}
	i.candidate <- ok
}

// Status returns a snapshot.
func (i *Instance) Status() Status {
	i.mu.Lock()
	s := i.status
	i.mu.Unlock()
	s.Sent, s.Received, s.SendErrors = i.sent.Load(), i.received.Load(), i.sendErrs.Load()
	s.Drops = i.drops.Snapshot()
	return s
}

type packet struct {
	adv Advertisement
	src netip.Addr
}

// Run runs the election until ctx ends, calling decide(vip, true) on
// becoming master and decide(vip, false) on leaving it. On return it has
// resigned: a master sent priority 0. It closes the transport.
func (i *Instance) Run(ctx context.Context, decide func(netip.Prefix, bool)) {
	// Not master yet, so the VIP must not be here (a killed earlier run may have left it).
	decide(i.cfg.VIP, false)
	primary := i.waitPrimary(ctx)
	i.m = NewMachine(Params{VRID: i.cfg.VRID, Priority: i.cfg.Priority, Interval: i.cfg.Interval,
		Preempt: i.cfg.Preempt, Primary: primary})
	i.primary.Store(&primary)
	i.setStatus(func(s *Status) { s.Primary = primary })
	packets := make(chan packet, 16)
	stop, readDone := make(chan struct{}), make(chan struct{})
	go func() { i.read(packets, stop); close(readDone) }()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	refresh := time.NewTicker(refreshEvery)
	defer refresh.Stop()
	again := time.NewTimer(time.Hour)
	again.Stop()
	defer again.Stop()
	handover := time.NewTimer(time.Hour)
	handover.Stop()
	defer handover.Stop()
	heard := false // the new master's advertisement came while handing over
	for {
		select {
		case <-refresh.C:
			i.refresh()
		case <-again.C:
			if i.m.State() == Master {
				decide(i.cfg.VIP, true)
			}
		case <-handover.C:
			why := "no other master announced itself"
			if heard {
				why = "another master announced itself"
			}
			i.handedOver(decide, why)
		case <-ctx.Done():
			i.apply(i.m.Shutdown(time.Now(), "shutting down"), decide)
			i.handedOver(decide, "shutting down")
			close(stop)
			i.conn.Close()
			<-readDone
			return
		case ok := <-i.candidate:
			// Make before break: a master that resigns keeps the VIP bound
			// until a backup has taken over, so that a client's packets in
			// the skew time reach a node that answers — the draining
			// apiserver serves them, a dead one's kernel refuses them at
			// once — instead of vanishing into a SYN retransmission a
			// second later.
			resign := !ok && i.m.State() == Master
			i.applyKeeping(i.m.SetCandidate(ok, time.Now()), decide, resign)
			if resign {
				i.handingOver, heard = true, false
				handover.Reset(i.handoverWait())
				i.log.Info("Keeping the VIP until another master announces itself", "at_most", i.handoverWait())
			}
		case p := <-packets:
			if p.adv.Priority > 0 && i.handingOver && !heard { // only a master advertises
				// Its gratuitous ARP / NA follows its advertisement by a
				// moment: a SYN sent in between must still find the VIP
				// here, or it waits a second for its retransmission.
				heard = true
				handover.Reset(handoverGrace)
			}
			i.apply(i.m.Receive(p.adv, p.src, time.Now()), decide)
		case <-timer.C:
			i.apply(i.m.Timeout(time.Now()), decide)
		}
		resetTimer(timer, i.m.Deadline())
		if i.announceAgain {
			i.announceAgain = false
			again.Reset(reannounceAgain)
		}
	}
}

// waitPrimary waits until the interface has an address to send from.
// After link up, the IPv6 link-local address needs about a second of
// duplicate address detection.
func (i *Instance) waitPrimary(ctx context.Context) netip.Addr {
	for tries := 0; ; tries++ {
		p, err := i.conn.Primary()
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

func (i *Instance) read(out chan<- packet, stop <-chan struct{}) {
	buf := make([]byte, 1500)
	for {
		a, src, err := i.conn.Receive(buf)
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
		case a.VRID != i.cfg.VRID:
			i.drops.Add(DropVRID)
			continue
		case src == *i.primary.Load():
			i.drops.Add(DropOwn)
			continue
		}
		i.received.Add(1)
		select {
		case out <- packet{adv: a, src: src}:
		case <-stop:
			return
		}
	}
}

func (i *Instance) apply(acts []Action, decide func(netip.Prefix, bool)) {
	i.applyKeeping(acts, decide, false)
}

// applyKeeping carries out the machine's actions; with keep, leaving the
// master state does not release the VIP (a resignation: see Run).
func (i *Instance) applyKeeping(acts []Action, decide func(netip.Prefix, bool), keep bool) {
	for _, a := range acts {
		if a.Send {
			i.send(a.Priority)
		}
		if a.Reannounce && time.Since(i.lastReannounce) >= reannounceEvery {
			i.lastReannounce = time.Now()
			i.log.Info("Another master is on the link, announcing the VIP again", "other", a.Other)
			decide(i.cfg.VIP, true)
			i.announceAgain = true
		}
		if a.Changed {
			from := i.Status().State
			i.log.Info("VRRP state changed", "vrid", i.cfg.VRID, "from", from, "to", a.To, "reason", a.Reason)
			i.setStatus(func(s *Status) { s.State, s.Changed, s.Reason = a.To, time.Now(), a.Reason })
			if a.To == Master || !keep {
				i.handingOver = false
				decide(i.cfg.VIP, a.To == Master)
			}
		}
	}
	i.setStatus(func(s *Status) { s.Master = i.m.Master() })
}

// handedOver releases the VIP a resigned master kept, if it kept it.
func (i *Instance) handedOver(decide func(netip.Prefix, bool), why string) {
	if !i.handingOver {
		return
	}
	i.handingOver = false
	i.log.Info("Handing the VIP over", "reason", why)
	decide(i.cfg.VIP, false)
}

// refresh reopens the transport on a re-created interface and takes a
// possibly new primary address.
func (i *Instance) refresh() {
	changed, err := i.conn.Refresh()
	if err != nil {
		i.log.Debug("VRRP interface check failed", "error", err)
		return
	}
	if !changed {
		return
	}
	i.log.Info("VRRP interface created again, socket reopened")
	if p, err := i.conn.Primary(); err == nil && p != *i.primary.Load() {
		i.log.Info("VRRP source address changed", "from", *i.primary.Load(), "to", p)
		i.m.SetPrimary(p)
		i.primary.Store(&p)
	}
}

func (i *Instance) send(priority uint8) {
	adv := &Advertisement{VRID: i.cfg.VRID, Priority: priority, Interval: Centiseconds(i.cfg.Interval),
		Addresses: []netip.Addr{i.cfg.VIP.Addr()}}
	if err := i.conn.Send(adv, *i.primary.Load()); err != nil {
		if i.sendErrs.Add(1) == 1 || i.sendErrs.Load()%100 == 0 {
			i.log.Warn("Sending VRRP advertisement failed", "error", err, "failures", i.sendErrs.Load())
		}
		return
	}
	i.sent.Add(1)
}

func (i *Instance) setStatus(f func(*Status)) {
	i.mu.Lock()
	f(&i.status)
	i.mu.Unlock()
}

// resetTimer makes t fire at deadline, or not at all for the zero time.
func resetTimer(t *time.Timer, deadline time.Time) {
	t.Stop()
	if !deadline.IsZero() {
		t.Reset(time.Until(deadline))
	}
}
