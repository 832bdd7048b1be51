package l2

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/novaedge/cpvip/internal/reconcile"
)

// Options configure the announcements.
type Options struct {
	Interface string
	Repeat    int           // announcements per takeover (GARP_REPEAT)
	Refresh   time.Duration // periodic re-announcement while holding; 0 = off
	Period    time.Duration // periodic reconcile pass
	Gap       time.Duration // between the announcements of one takeover; 0 = RepeatGap
	// Guard, when set, is the conflict check: one input of the bind
	// decision (internal/acd, internal/bind).
	Guard reconcile.Checker
	// Self, when set, returns this node's own address of a VIP's family
	// (its VRRP source address; invalid: none yet). A takeover announces it
	// first, as Linux's arp_notify does on link up: the other nodes' kernels
	// update their neighbour entry for us, and their conflict checks know
	// the MAC that then answers for the VIP as ours even when it changed
	// (the interface made again, a bond's failover).
	Self func(family netip.Addr) netip.Addr
	// WaitCaughtUp, when set, waits at most a while until the election
	// has read every advertisement the kernel queued before a time
	// (vrrp.Instance.WaitCaughtUp): a late repeat waits for it (burst).
	WaitCaughtUp func(ctx context.Context, t time.Time, max time.Duration) bool
	// Leading, when set, says whether the election has this node as its
	// master now: only then does it announce (Gates.Leading), a late
	// repeat once more after the election caught up. A node that stepped
	// back keeps the VIP a moment for the packets already on their way (a
	// handover), but an announcement of its own then would pull the
	// neighbours away from the master that just announced itself, to a
	// node about to let the VIP go (testdata/burst/only-the-leader.txt,
	// TestOnlyTheMasterAnnounces, TestLateRepeatGoesOnlyWhileLeading).
	Leading func() bool
	// Contests, when set, says whether this node answers another router's
	// announcement of a VIP it holds (Contested): the master for a while,
	// not one that just took over (vrrp.Elector.Established).
	Contests func() bool
	// Lapsed, when set, is told that a held VIP's lifetime ran out while
	// this process did not run (reconcile.Hooks.Lapsed): the election
	// binds it again if this node is still its master
	// (vrrp.Elector.Lapsed).
	Lapsed func()
}

// Announcer binds and announces held VIPs on an L2 segment. Hold and Release
// may be called from any goroutine; everything else runs in Run's goroutine.
type Announcer struct {
	opts Options
	rec  *reconcile.Reconciler
	loop *reconcile.Loop
	send func(ifname string, vip netip.Addr) error
	log  *slog.Logger
	ctx  context.Context // Run's, for the bursts
	// running is Run's context for other goroutines (Contested); nil before Run.
	running atomic.Pointer[context.Context]
	bursts  map[netip.Addr]context.CancelFunc
	// repeat and refresh are Options.Repeat and .Refresh, changed by a reload.
	repeat  atomic.Int64
	refresh atomic.Int64

	// Sent and SendFailed count single announcements.
	Sent, SendFailed atomic.Uint64
}

// NewAnnouncer returns an Announcer that binds through rec, woken by the
// kernel's events, and sends with send (Send in production).
func NewAnnouncer(opts Options, rec *reconcile.Reconciler, events <-chan reconcile.Event,
	send func(string, netip.Addr) error, log *slog.Logger) *Announcer {
	if opts.Gap == 0 {
		opts.Gap = RepeatGap
	}
	a := &Announcer{opts: opts, rec: rec, send: send, log: log, bursts: map[netip.Addr]context.CancelFunc{}}
	a.SetGARP(opts.Repeat, opts.Refresh)
	if opts.Guard != nil {
		rec.SetCheck(opts.Guard)
	}
	a.loop = reconcile.NewLoop(rec, events, opts.Period, Hooks(bursts{a}, log, opts.Interface, opts.Lapsed))
	return a
}

// Poke makes the loop ask the guard again soon.
func (a *Announcer) Poke() { a.loop.Poke() }

// Hold makes this node hold vip and announce it now: a VIP bound already
// is announced again (the elector asks when it must win neighbours back).
func (a *Announcer) Hold(vip netip.Prefix) {
	a.loop.Hold(vip)
}

// SetGARP changes the announcements per takeover and the refresh period (a
// reload): they count from the next announcement, a running refresh
// included.
func (a *Announcer) SetGARP(repeat int, refresh time.Duration) {
	a.repeat.Store(int64(repeat))
	a.refresh.Store(int64(refresh))
}

// Contested is told that another router of our group announced vip
// (acd.Contested note): the neighbours that heard it now send to that
// router. When the election, caught up with what the kernel queued, still
// has this node as the master holding vip, it announces vip again.
func (a *Announcer) Contested(vip netip.Addr) {
	a.again(vip, Again{Contest: true}, "Another router of our group announced the VIP: announcing it again")
}

// Defend is told that this node defends vip against another host's answer
// (acd.Defend note, RFC 5227): it announces vip again, as Contested does,
// however long it has been the master.
func (a *Announcer) Defend(vip netip.Addr) {
	a.again(vip, Again{}, "Defending the VIP: announcing it again")
}

// again announces vip again once the election has read what the kernel
// queued, if it goes then (Again.Goes).
func (a *Announcer) again(vip netip.Addr, req Again, msg string) {
	ctx := a.running.Load()
	if ctx == nil {
		return
	}
	go func() {
		if !a.caughtUp(*ctx, time.Now()) || !req.Goes(a.loop.Wanted(vip), a.leading(), a.established()) {
			return
		}
		a.log.Info(msg, "address", vip)
		a.loop.Again(vip)
	}()
}

func (a *Announcer) leading() bool     { return a.opts.Leading == nil || a.opts.Leading() }
func (a *Announcer) established() bool { return a.opts.Contests == nil || a.opts.Contests() }

// Release makes this node give vip up.
func (a *Announcer) Release(vip netip.Prefix) { a.loop.Set(vip, false) }

// Run runs the reconcile loop until ctx ends; it returns once every VIP is released.
func (a *Announcer) Run(ctx context.Context) {
	a.ctx = ctx
	a.running.Store(&ctx)
	a.loop.Run(ctx)
}

// bursts are the Announcer's goroutines, one a VIP, as the loop's hooks
// see them.
type bursts struct{ a *Announcer }

func (b bursts) Start(vip netip.Addr) { b.a.startBurst(vip) }
func (b bursts) Stop(vip netip.Addr)  { b.a.stopBurst(vip) }

func (a *Announcer) startBurst(vip netip.Addr) {
	a.stopBurst(vip)
	ctx, cancel := context.WithCancel(a.ctx)
	a.bursts[vip] = cancel
	go a.burst(ctx, vip)
}

func (a *Announcer) stopBurst(vip netip.Addr) {
	if cancel, ok := a.bursts[vip]; ok {
		cancel()
		delete(a.bursts, vip)
	}
}

// burst announces vip on the Burst's schedule until ctx ends or the VIP
// is no longer to be announced (Burst.Go). A failed announcement is
// retried SendTries times RetryGap apart before it counts as
// sent-and-failed.
func (a *Announcer) burst(ctx context.Context, vip netip.Addr) {
	t := time.NewTimer(0)
	defer t.Stop()
	b := NewBurst(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		gates := func() Gates { return a.gates(b, vip) }
		if !b.Go(time.Now, gates, func(now time.Time) bool { return a.caughtUp(ctx, now) }) {
			return // let go (the step that stops the burst follows), or a backup now
		}
		if b.Self() && a.opts.Self != nil {
			if self := a.opts.Self(vip); self.IsValid() {
				a.announce(ctx, self)
			}
		}
		a.announce(ctx, vip)
		next := b.Sent(time.Now(), int(a.repeat.Load()), a.opts.Gap, time.Duration(a.refresh.Load()))
		if next.IsZero() {
			return
		}
		t.Reset(time.Until(next))
	}
}

// gates is what the node says of vip as b's announcement is due (Ask).
func (a *Announcer) gates(b *Burst, vip netip.Addr) Gates {
	return b.Ask(func() bool { return a.loop.Wanted(vip) }, a.leading, func() bool { return a.rec.Fresh(vip) })
}

// caughtUp waits, at most catchUpWait, until the election has read what
// the kernel queued before now; false when ctx ends.
func (a *Announcer) caughtUp(ctx context.Context, now time.Time) bool {
	if a.opts.WaitCaughtUp != nil {
		a.opts.WaitCaughtUp(ctx, now, catchUpWait)
	}
	return ctx.Err() == nil
}

func (a *Announcer) announce(ctx context.Context, vip netip.Addr) {
	var err error
	for try := 0; try < SendTries; try++ {
		if err = a.send(a.opts.Interface, vip); err == nil {
			a.Sent.Add(1)
			a.log.Debug("Announced VIP", "address", vip, "interface", a.opts.Interface)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(RetryGap):
		}
	}
	a.SendFailed.Add(1)
	a.log.Warn("Announcing VIP failed", "address", vip, "interface", a.opts.Interface, "error", err)
}
