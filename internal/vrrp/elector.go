package vrrp

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"
)

// Elector runs the node's one VRRP instance for every VIP and implements
// the agent's elector: health sets our priority in it.
//
// Fail open: a node whose apiserver fails stays in the election with
// FailOpenPriority once it has been healthy since it started, so the VIP
// stays where it is while no node is healthy, still moves if its holder
// dies, and goes to a healthy node within that node's skew time once that
// node's health has settled (health.SettleRun, SetSettled). A node
// never healthy since it started takes no part, so nothing is bound before
// bootstrap. With fail open off, an unhealthy node leaves the election.
type Elector struct {
	inst     *Instance
	failOpen bool
	log      *slog.Logger

	mu        sync.Mutex // guards the fields below
	priority  uint8      // when healthy
	healthy   bool
	seen      bool   // healthy at least once since start
	unhealthy string // why, while unhealthy
	certain   bool   // the latest failure leaves no doubt (SetCertain)
}

// NewElector returns an elector over inst; priority is ours while healthy.
func NewElector(inst *Instance, priority uint8, failOpen bool, log *slog.Logger) *Elector {
	return &Elector{inst: inst, priority: priority, failOpen: failOpen, log: log}
}

// ElectionPriority is the priority a node takes part in the election
// with: its own while healthy; FailOpenPriority while unhealthy with fail
// open, once it has been healthy since it started; else 0, not a
// candidate.
func ElectionPriority(healthy, seenHealthy, failOpen bool, priority uint8) uint8 {
	switch {
	case healthy:
		return priority
	case failOpen && seenHealthy:
		return FailOpenPriority
	default:
		return 0
	}
}

// SetHealthy implements the agent's Elector.
func (e *Elector) SetHealthy(ok bool, reason string) {
	e.mu.Lock()
	e.seen = e.seen || ok
	e.healthy, e.unhealthy = ok, reason
	if ok {
		e.unhealthy = ""
	}
	defer e.mu.Unlock() // the priority sent is the one of the latest state, reloads included
	p := ElectionPriority(ok, e.seen, e.failOpen, e.priority)
	switch {
	case ok:
		e.log.Info("API server is healthy, joining VRRP election", "priority", p)
	case p == FailOpenPriority && e.Leading() && e.certain:
		e.log.Warn("API server is unhealthy, releasing VIP", "vrrp", "sending priority 0: a healthy node takes it within its skew time; kept here with the fail-open priority if none does", "reason", reason)
	case p == FailOpenPriority && e.Leading():
		e.log.Warn("API server is unhealthy, releasing VIP", "vrrp", "fail-open priority 1: a settled healthy node takes it within its skew time; kept here while none is", "reason", reason)
	case p == FailOpenPriority:
		e.log.Warn("API server is unhealthy, staying in the VRRP election with the fail-open priority", "priority", p, "reason", reason)
	case e.Leading():
		e.log.Warn("API server is unhealthy, releasing VIP", "vrrp", "sending priority 0", "reason", reason)
	default:
		e.log.Warn("API server is unhealthy, leaving VRRP election", "reason", reason)
	}
	e.inst.setPriority(priority{p: p, why: e.unhealthy, certain: !ok && e.certain}) // why: empty while healthy
}

// SetCertain implements the agent's Resigner: told before SetHealthy
// whether the apiserver certainly does not serve (refused, draining).
func (e *Elector) SetCertain(certain bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.certain = certain
}

// SetSettled implements the agent's Settler: an unsettled node does not
// take the VIP from a fail-open master.
func (e *Elector) SetSettled(settled bool) { e.inst.SetSettled(settled) }

// SetPriority changes our priority while healthy (a reload); a healthy
// node takes part with it at once.
func (e *Elector) SetPriority(p uint8) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.priority = p
	if e.healthy {
		e.inst.SetPriority(p, "")
	}
}

// SetPreempt changes whether a stronger backup takes the VIP from a weaker master.
func (e *Elector) SetPreempt(on bool) { e.inst.SetPreempt(on) }

// SetSettleWithin changes how long settling holds a healthy backup back
// from a fail-open master (Config.SettleWithin).
func (e *Elector) SetSettleWithin(d time.Duration) { e.inst.SetSettleWithin(d) }

// CaughtUp is Instance.CaughtUp.
func (e *Elector) CaughtUp(t time.Time) bool { return e.inst.CaughtUp(t) }

// Leading says whether this node is the group's master now (l2.Options.Leading).
func (e *Elector) Leading() bool { return e.inst.Status().State == Master }

// Established says whether this node has been the group's master for
// longer than a backup waits for a master (3 intervals and the skew at
// most): another router's announcement of the VIP is then a stray to
// answer (l2.Options.Contests). One that just took over may hear the
// router it replaced, alive after all: the election settles that.
func (e *Elector) Established() bool {
	st := e.inst.Status()
	return st.State == Master && time.Since(st.Changed) >= 4*e.inst.cfg.Interval
}

// FailOpen reports whether this node holds the VIP only because no node is
// healthy (it is master with the fail-open priority), and why it is
// unhealthy.
func (e *Elector) FailOpen() (bool, string) {
	st := e.inst.Status()
	e.mu.Lock()
	defer e.mu.Unlock()
	return st.State == Master && st.Priority == FailOpenPriority, e.unhealthy
}

// Run implements the agent's Elector: it runs the instance until ctx ends.
func (e *Elector) Run(ctx context.Context, decide func(netip.Prefix, bool)) {
	held := map[netip.Prefix]bool{}
	e.inst.Run(ctx, func(vip netip.Prefix, hold bool) {
		if hold && !held[vip] { // not for a re-announcement of a VIP held already
			if keeping, why := e.FailOpen(); keeping {
				e.log.Warn("No node is healthy: keeping the VIP (fail open)", "vip", vip, "vrrp", "master", "reason", why)
			} else {
				e.log.Info("API server is healthy, binding VIP", "vip", vip, "vrrp", "master")
			}
		}
		held[vip] = hold
		decide(vip, hold)
	})
}

// Served says another host answered for a VIP, and whether it is a known
// router of our group (Instance.Served).
func (e *Elector) Served(member bool) { e.inst.Served(member) }

// Lapsed says a held VIP's lifetime ran out (Instance.Lapsed).
func (e *Elector) Lapsed() { e.inst.Lapsed() }

// LinkChanged says the interface changed (Instance.LinkChanged).
func (e *Elector) LinkChanged() { e.inst.LinkChanged() }

// Primary returns our source address of family's address family (Instance.Primary).
func (e *Elector) Primary(family netip.Addr) netip.Addr { return e.inst.Primary(family) }

// Statuses returns a snapshot per VIP: one election, so one state.
func (e *Elector) Statuses() []Status {
	st := e.inst.Status()
	out := make([]Status, len(e.inst.cfg.VIPs))
	for k, vip := range e.inst.cfg.VIPs {
		out[k] = st
		out[k].VIP = vip
	}
	return out
}
