package vrrp

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"
)

// Effect is one thing a Core decided its driver must do; Ready returns
// them in the order they were decided.
type Effect struct {
	Kind     EffectKind
	Priority uint8 // Advertise: the priority
	Hold     bool  // Decide: hold the VIPs or not
	// From, To, Reason and At: Report's state change.
	From, To State
	Reason   string
	At       time.Time
}

// EffectKind says what an Effect asks.
type EffectKind int

// The effects.
const (
	// Advertise: send an advertisement with Priority for every VIP.
	Advertise EffectKind = iota
	// Ask: probe whether another router's host answers for the VIPs now;
	// an answer comes back through Core.Served.
	Ask
	// Decide: hold the VIPs or not; a hold while they are held asks for
	// them to be announced again.
	Decide
	// Report: the state changed (for the status).
	Report
)

// Core is an instance's decisions without goroutines or clocks: the state
// machine (Machine) and what the instance adds around it — the VIPs found
// bound at start held until the first health verdict (resume), a resigning
// master keeping the VIPs until another announces itself (make before
// break), announcing again after a contention, and what health makes of
// our part (Health). It takes events — a packet, a timer, a health verdict,
// an answer to its question, a carrier change, a reload — each with the
// time, and returns what to do as Effects (Ready): it calls nothing.
// Deadline says when Timeout is due. Instance.Run drives it with the wall
// clock and the network; internal/testing/sim drives it on a virtual clock.
type Core struct {
	cfg     Config
	m       *Machine
	effects []Effect // decided, not yet taken (Ready)
	log     *slog.Logger

	state    State // as last reported (Report)
	priority uint8 // as last set: 0 = not a candidate
	failing  string

	vote vote // what health makes of our part (Health)

	phase    Phase
	resume   resuming // Resuming
	handover handover // HandingOver
	// handoverAt: a handover ends then (the VIPs released, or kept at the
	// fail-open priority), and a fail-open master says whether a healthy
	// node took them; zero: no such timer.
	handoverAt  time.Time
	againAt     time.Time // announce once more then (after a contention)
	reannounced time.Time // the latest announcement caused by another master
}

// Phase is where a Core stands beside its machine's state.
type Phase int

const (
	// Steady: the machine's state says it all.
	Steady Phase = iota
	// Resuming: the VIPs found bound at start (an earlier run was killed)
	// stay bound and wait for the first health verdict.
	Resuming
	// HandingOver: resigned (or yielded to a stronger master) with the
	// VIPs still bound, until another master announces itself (make
	// before break).
	HandingOver
)

// String names the phase.
func (p Phase) String() string {
	return [...]string{"steady", "resuming", "handing over"}[p]
}

// resuming is the Resuming phase's data.
type resuming struct {
	started time.Time // Start's time: the transports were listening by then
	until   time.Time // the VIPs go then
	// at: healthy, resume then, one advertisement interval after started,
	// unless another master is heard first (zero: no verdict yet).
	at time.Time
}

// handover is the HandingOver phase's data.
type handover struct {
	heard bool // the new master announced itself
	// fallback: resigned because the apiserver certainly does not serve;
	// if no other master announces itself, it stays master at the
	// fail-open priority (fail open: a failure every node shares keeps the
	// VIP where it is).
	fallback bool
	// again: when a resigned master that still holds the VIPs sends
	// priority 0 again (every interval until a master announces itself):
	// its kernel answers the backups' questions (Machine.Served), so a
	// lost priority 0 would keep them waiting until it let go, a gap.
	again time.Time
}

// NewCore returns the core of an instance of cfg, not yet a candidate.
func NewCore(cfg Config, log *slog.Logger) *Core {
	return &Core{cfg: cfg, log: log, vote: vote{base: cfg.Priority},
		m: NewMachine(Params{VRID: cfg.VRID, Interval: cfg.Interval, Sends: cfg.Sends, Preempt: cfg.Preempt,
			ServedWait: cfg.ServedWait, SettleWithin: cfg.SettleWithin})}
}

// resumeWait is how long VIPs found bound at start wait for the first
// health verdict: a master down interval, or as long as the backups wait
// for a master whose host answers for them (ServedWait), after which a
// backup would have taken over.
func (c *Core) resumeWait() time.Duration { return max(3*c.cfg.Interval, c.cfg.ServedWait) }

// ResumeListen is how long a restarted daemon listens for another master
// before it resumes: an advertisement interval (a master advertises at
// least that often), and a quarter more for the network's delay and a late
// timer.
func ResumeListen(interval time.Duration) time.Duration { return interval * 5 / 4 }

// handoverWait is how long a master that resigned keeps the VIP bound while
// no other master announces itself: a master-down interval (three intervals
// and a skew under one; a fail-open backup waits for it, Machine.Receive)
// and an interval more, after which no backup will take over.
func (c *Core) handoverWait() time.Duration { return 5 * c.cfg.Interval }

// fallbackWait is how long a master that resigned for a certain failure
// waits for a healthy backup to announce itself (within its skew, under an
// interval) before it keeps the VIP at the fail-open priority: before a
// fail-open backup's master-down interval runs out.
func (c *Core) fallbackWait() time.Duration { return 2 * c.cfg.Interval }

// Start begins the run: with Config.Resume the VIPs found bound stay and
// wait for a verdict; without, they must not be here (not master yet).
func (c *Core) Start(now time.Time) {
	if !c.cfg.Resume {
		c.decide(false)
		return
	}
	c.phase, c.resume = Resuming, resuming{started: now, until: now.Add(c.resumeWait())}
	c.log.Info("VIP found bound at start (an earlier run was killed): keeping it until the first health check decides", "at_most", c.resumeWait())
}

// SetPrimary sets our primary address, the tie-breaker.
func (c *Core) SetPrimary(a netip.Addr) { c.m.SetPrimary(a) }

// SetPreempt changes Preempt (a reload).
func (c *Core) SetPreempt(on bool) { c.m.SetPreempt(on) }

// SetSettleWithin changes SettleWithin (a reload).
func (c *Core) SetSettleWithin(d time.Duration) { c.m.SetSettleWithin(d) }

// Took is Machine.Took (the simulation's invariant).
func (c *Core) Took() Cause { return c.m.Took() }

// SetUnsettled changes whether we take the VIP from a fail-open master
// (Params.Unsettled).
func (c *Core) SetUnsettled(u bool, now time.Time) {
	c.log.Debug("Health settled changed", "settled", !u)
	c.m.SetUnsettled(u, now)
}

// State, Priority and Master are for the status.
func (c *Core) State() State            { return c.m.State() }
func (c *Core) Priority() uint8         { return c.priority }
func (c *Core) Master() netip.Addr      { return c.m.Master() }
func (c *Core) Phase() Phase            { return c.phase }
func (c *Core) Machine() *Machine       { return c.m }
func (c *Core) Interval() time.Duration { return c.cfg.Interval }

// Deadline returns when Timeout is due next; zero: nothing is.
func (c *Core) Deadline() time.Time {
	next := c.m.Deadline()
	for _, at := range []time.Time{c.againAt, c.handoverAt, c.handover.again} {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	for _, at := range []time.Time{c.resume.until, c.resume.at} {
		if c.phase == Resuming && !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// Timeout runs what is due at now.
func (c *Core) Timeout(now time.Time) {
	if c.phase == Resuming && !c.resume.at.IsZero() && !now.Before(c.resume.at) {
		c.resumed(now)
	}
	if c.phase == Resuming && !now.Before(c.resume.until) {
		c.endResume("no health verdict in time", now)
	}
	if !c.againAt.IsZero() && !now.Before(c.againAt) {
		c.againAt = time.Time{}
		if c.m.State() == Master {
			c.decide(true)
		}
	}
	if h := &c.handover; !h.again.IsZero() && !now.Before(h.again) {
		h.again = time.Time{}
		if c.phase == HandingOver && !h.heard && c.m.State() != Master {
			c.emit(Effect{Kind: Advertise, Priority: 0})
			h.again = now.Add(c.cfg.Interval)
		}
	}
	if !c.handoverAt.IsZero() && !now.Before(c.handoverAt) {
		c.handoverAt = time.Time{}
		why := "no other master announced itself"
		if c.handover.heard {
			why = "another master announced itself"
		}
		switch handing := c.phase == HandingOver; {
		case handing && c.handover.fallback && !c.handover.heard && c.m.State() == Initialize:
			// No healthy node took over: before a fail-open backup would.
			c.keepFailOpen("no healthy node took the VIP", now)
		case handing && c.handover.fallback:
			// Handed over for a certain failure: a backup at the fail-open
			// priority from now on, as an unhealthy node is.
			c.handedOver(why)
			c.handover.fallback = false
			c.apply(c.setPriority(FailOpenPriority, now), false, now)
		default:
			c.handover.fallback = false // the carrier went meanwhile: the fault released the VIP
			c.handedOver(why)
		}
		if c.m.State() == Master && c.m.Priority() == FailOpenPriority {
			c.log.Warn("No node is healthy: keeping the VIP (fail open)", "reason", c.failing)
		}
	}
	c.apply(c.m.Timeout(now), false, now)
}

// SetCertain says whether the apiserver certainly does not serve (its port
// refuses, or it is shutting down), for the next SetPriority.
func (c *Core) SetCertain(certain bool) { c.vote.certain = certain }

// SetPriority sets our priority: 0 leaves the election (a master resigns),
// 1-254 takes part with it; why says why the apiserver is unhealthy, empty
// while it is healthy (a node configured with priority 1 and fail open off
// is healthy at the fail-open priority).
func (c *Core) SetPriority(p uint8, why string, now time.Time) {
	c.failing = why
	if c.phase == HandingOver && c.handover.fallback && !c.handover.heard && c.m.State() == Initialize && p > 0 {
		// Resigned for a certain failure, still waiting for a healthy
		// node: another verdict while failing (a drain's port closing)
		// keeps that wait and its fallback; healthy again first, it is
		// master again at once with the VIP it kept.
		if why != "" {
			return
		}
		c.phase, c.handover, c.handoverAt = Steady, handover{}, time.Time{}
		c.priority = p
		c.m.SetPriority(p, now) // in Initialize: no action
		c.apply(c.m.Rejoin(now, "healthy again before another node took the VIP"), false, now)
		return
	}
	// Make before break: a master that resigns keeps the VIP bound until a
	// backup has taken over, so that a client's packets in the skew time
	// reach a node that answers — the draining apiserver serves them, a
	// dead one's kernel refuses them at once — instead of vanishing into a
	// SYN retransmission a second later.
	//
	// A master whose apiserver certainly does not serve (refused,
	// draining) resigns at once, even with fail open: its backups take
	// over within their skew whether or not their own checks have settled
	// (an apiserver that refuses is no better a holder than one whose
	// checks flicker). If none announces itself, it keeps the VIP at the
	// fail-open priority.
	fallback := p == FailOpenPriority && why != "" && c.vote.certain && c.m.State() == Master
	if fallback {
		p = 0
	}
	c.handover.fallback = fallback
	resign := p == 0 && c.m.State() == Master
	if c.phase == Resuming && p > 0 && why == "" {
		// A restarted daemon resumes only once it has listened for a whole
		// advertisement interval and heard no master (Receive ends the
		// resume): another node may have taken over while it was down.
		c.priority = p
		c.m.SetPriority(p, now) // in Initialize: no action
		// Always from the timer: the driver reads the advertisements
		// queued by then before it (Instance.Run).
		c.resume.at = later(c.resume.started.Add(ResumeListen(c.cfg.Interval)), now)
		return
	}
	c.endResume("the apiserver is not healthy", now)
	c.apply(c.setPriority(p, now), resign, now)
	if resign {
		wait := c.handoverWait()
		if fallback {
			wait = c.fallbackWait()
		}
		c.phase, c.handover = HandingOver, handover{fallback: fallback, again: now.Add(c.cfg.Interval)}
		c.handoverAt = now.Add(wait)
		c.log.Info("Keeping the VIP until another master announces itself", "at_most", wait)
	}
	if p == FailOpenPriority && why != "" && c.m.State() == Master {
		c.handoverAt = now.Add(c.handoverWait()) // then say whether a healthy node took it
	}
}

// keepFailOpen: a master that resigned for a certain failure is master
// again at once at the fail-open priority, with the VIP it kept (fail
// open), for why.
func (c *Core) keepFailOpen(why string, now time.Time) {
	c.phase, c.handover.fallback, c.handover.again = Steady, false, time.Time{}
	c.priority = FailOpenPriority
	c.m.SetPriority(FailOpenPriority, now) // in Initialize: no action
	c.apply(c.m.Rejoin(now, why+": keeping it with the fail-open priority"), false, now)
}

// setPriority hands a new priority to the machine: 0 leaves the election,
// anything else joins it or changes our priority in it.
func (c *Core) setPriority(p uint8, now time.Time) []Action {
	c.priority = p
	if p == 0 {
		return c.m.SetCandidate(false, now)
	}
	acts := c.m.SetPriority(p, now)
	return append(acts, c.m.SetCandidate(true, now)...)
}

// Receive handles a valid advertisement of our group from src.
func (c *Core) Receive(a Advertisement, src netip.Addr, now time.Time) {
	if a.Priority > 0 {
		c.endResume("another master announces itself: "+src.String(), now)
	}
	if a.Priority > 0 && c.phase == HandingOver && !c.handover.heard { // only a master advertises
		// Its gratuitous ARP / NA follows its advertisement by a moment: a
		// SYN sent in between must still find the VIP here, or it waits a
		// second for its retransmission.
		c.handover.heard = true
		c.handoverAt = now.Add(handoverGrace)
	}
	if a.Priority == 0 && c.phase == HandingOver && !c.handover.fallback && !c.handover.heard && c.m.State() == Initialize &&
		src.Compare(c.m.p.Primary) > 0 {
		// With fail open off, a resigned holder keeps the VIP only for a
		// healthy node; another holder's priority 0 from a higher address
		// comes from none: it lets the VIP go at once, and the higher
		// keeps it for a healthy node, as between two masters
		// (testdata/core/two-resigned-holders.txt).
		c.handedOver("another master resigned too, with a higher address")
		c.handover, c.handoverAt = handover{}, time.Time{}
		return
	}
	if a.Priority == 0 && c.phase == HandingOver && c.handover.fallback && !c.handover.heard && c.m.State() == Initialize {
		// A holder resigned for a certain failure that hears another
		// priority 0 is master again at the fail-open priority at once:
		// if that is another holder resigning too (a split brain healed
		// while the failure is every node's), the two masters' tie then
		// resolves as any does, instead of both keeping the VIP until the
		// fallback; a healthy node still takes it from a fail-open master.
		c.keepFailOpen("another master resigned too", now)
		c.handoverAt = now.Add(c.handoverWait()) // then say whether a healthy node took it
		return
	}
	// A master that yields to a stronger one (a healthy node taking the VIP
	// from a fail-open master) hands over the same way. Not on a tie (two
	// backups took over at once): the loser's VIP would only prolong the
	// double holding. Nor after a freeze (Machine.wasAbsent): the other
	// has served for a while, its announcements long out.
	yield := c.m.State() == Master && a.Priority > c.m.Priority() && !c.m.wasAbsent(now)
	acts := c.m.Receive(a, src, now)
	yield = yield && c.m.State() == Backup
	c.apply(acts, yield, now)
	if yield {
		c.phase, c.handover.heard = HandingOver, true
		c.handoverAt = now.Add(handoverGrace)
	}
}

// Served says that a host other than this node answered for a VIP at
// now, and whether it is a known router of our group (Machine.Served): a
// backup whose master went silent waits for it while its host answers.
func (c *Core) Served(member bool, now time.Time) {
	until, began := c.m.Served(member, now)
	if began && !c.m.Master().IsValid() {
		c.log.Info("No master heard yet, but another host answers for the VIP: waiting for it (a master whose daemon is restarting, or an address conflict)",
			"at_most", until.Sub(now).Round(time.Millisecond))
	} else if began {
		c.log.Info("Master silent, but its host still answers for the VIP: waiting for it (its daemon restarting)",
			"master", c.m.Master(), "at_most", until.Sub(now).Round(time.Millisecond))
	}
}

// Carrier follows the interface's carrier: lost, the node leaves the
// election and releases the VIP at once (Machine.SetCarrier).
func (c *Core) Carrier(up bool, now time.Time) {
	acts := c.m.SetCarrier(up, now)
	if len(acts) == 0 {
		return
	}
	if up {
		c.log.Info("Carrier back on the VRRP interface: rejoining the election", "as", c.m.State())
	} else {
		c.log.Warn("No carrier on the VRRP interface: leaving the election, releasing the VIP")
	}
	c.apply(acts, false, now)
}

// Lapsed is told that the lifetime of the VIPs ran out before this process
// renewed it (it did not run: frozen, starved) and the reconcile loop let
// them go. Called once the advertisements queued meanwhile are read: a
// master still, no other took over, so it binds them again.
func (c *Core) Lapsed(now time.Time) {
	if c.m.State() == Master {
		c.log.Warn("The VIP's lifetime ran out, and this node is still the master: binding it again", "vrid", c.cfg.VRID)
		c.decide(true)
	}
}

// Gone is what became of the election's interface.
type Gone int

// The ways an interface goes.
const (
	Deleted   Gone = iota // the interface was deleted
	MadeAgain             // it was deleted and created again (a new index)
)

// Gone leaves the election because the interface was deleted or made
// again (said once); carrier on the new interface starts it as a backup
// (Machine.Forget).
func (c *Core) Gone(how Gone, now time.Time) {
	msg, reason := "VRRP interface gone: leaving the election, releasing the VIP", "the interface was deleted"
	if how == MadeAgain {
		msg, reason = "VRRP interface created again: leaving the election until it has carrier", "the interface was created again"
	}
	acts := c.m.Fault(reason, now)
	c.m.Forget()
	if len(acts) > 0 {
		c.log.Warn(msg)
		c.apply(acts, false, now)
	}
}

// Shutdown resigns (a master sends priority 0) and releases the VIPs.
func (c *Core) Shutdown(now time.Time) {
	c.apply(c.m.Shutdown(now, "shutting down"), false, now)
	c.handedOver("shutting down")
	if c.phase == Resuming {
		c.phase = Steady
	}
}

// resumed makes the node master of the VIPs it found bound at start.
func (c *Core) resumed(now time.Time) {
	c.phase, c.resume = Steady, resuming{}
	c.apply(c.m.Rejoin(now, "resumed: the VIP was bound at start and the apiserver is healthy"), false, now)
}

// endResume releases the VIPs found at start if they still wait, saying
// why; a healthy verdict that waited for the resume joins the election.
func (c *Core) endResume(why string, now time.Time) {
	if c.phase != Resuming {
		return
	}
	healthy := !c.resume.at.IsZero()
	c.phase, c.resume = Steady, resuming{}
	c.log.Info("Not resuming: releasing the VIP found bound at start", "reason", why)
	c.decide(false)
	if healthy {
		c.apply(c.setPriority(c.priority, now), false, now)
	}
}

// handedOver releases the VIP a resigned master kept, if it kept it.
func (c *Core) handedOver(why string) {
	if c.phase != HandingOver {
		return
	}
	c.phase = Steady
	c.log.Info("Handing the VIP over", "reason", why)
	c.decide(false)
}

// apply carries out the machine's actions; with keep, leaving the master
// state does not release the VIP (a resignation: SetPriority).
func (c *Core) apply(acts []Action, keep bool, now time.Time) {
	for _, a := range acts {
		if a.Ask {
			c.emit(Effect{Kind: Ask})
		}
		if a.Send {
			c.emit(Effect{Kind: Advertise, Priority: a.Priority})
		}
		if a.Reannounce && now.Sub(c.reannounced) >= reannounceEvery {
			c.reannounced = now
			c.log.Info("Another master is on the link, announcing the VIP again", "other", a.Other)
			c.decide(true)
			c.againAt = now.Add(reannounceAgain)
		}
		if a.Changed {
			from := c.state
			c.state = a.To
			c.log.Info("VRRP state changed", "vrid", c.cfg.VRID, "from", from, "to", a.To, "reason", a.Reason)
			c.emit(Effect{Kind: Report, From: from, To: a.To, Reason: a.Reason, At: now})
			if a.To == Master || !keep {
				if c.phase == HandingOver {
					c.phase = Steady
				}
				c.decide(a.To == Master)
			}
		}
	}
}

// Ready returns the effects decided since it was last called, in order.
// The driver carries them out after each call that may decide (every
// event); the Core keeps none of them.
func (c *Core) Ready() []Effect {
	out := c.effects
	c.effects = nil
	return out
}

func (c *Core) emit(e Effect) { c.effects = append(c.effects, e) }

func (c *Core) decide(hold bool) { c.emit(Effect{Kind: Decide, Hold: hold}) }

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// String describes the core for a trace.
func (c *Core) String() string {
	return fmt.Sprintf("%s prio=%d resuming=%v handing_over=%v", c.m.State(), c.priority, c.phase == Resuming, c.phase == HandingOver)
}
