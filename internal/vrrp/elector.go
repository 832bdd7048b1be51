package vrrp

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/health"
)

// Elector runs the node's one VRRP instance for every VIP and implements
// the agent's elector: health sets our priority in it (Core.Health).
type Elector struct {
	inst *Instance
	log  *slog.Logger
}

// NewElector returns an elector over inst.
func NewElector(inst *Instance, log *slog.Logger) *Elector {
	return &Elector{inst: inst, log: log}
}

// Health implements the agent's Elector.
func (e *Elector) Health(tr health.Transition) { e.inst.Health(tr) }

// SetPriority changes our priority while healthy (a reload); a healthy
// node takes part with it at once.
func (e *Elector) SetPriority(p uint8) { e.inst.SetPriority(p) }

// SetPreempt changes whether a stronger backup takes the VIP from a weaker master.
func (e *Elector) SetPreempt(on bool) { e.inst.SetPreempt(on) }

// SetSettleWithin changes how long settling holds a healthy backup back
// from a fail-open master (Config.SettleWithin).
func (e *Elector) SetSettleWithin(d time.Duration) { e.inst.SetSettleWithin(d) }

// WaitCaughtUp is Instance.WaitCaughtUp.
func (e *Elector) WaitCaughtUp(ctx context.Context, t time.Time, max time.Duration) bool {
	return e.inst.WaitCaughtUp(ctx, t, max)
}

// Leading is Instance.Leading (l2.Options.Leading).
func (e *Elector) Leading() bool { return e.inst.Leading() }

// Established is Instance.Established now (l2.Options.Contests).
func (e *Elector) Established() bool { return e.inst.Established(time.Now()) }

// Established says whether a master for masterFor has been one longer
// than a backup waits for a master (3 intervals and the skew at most):
// another router's announcement of the VIP is then a stray to answer
// (l2.Options.Contests). One that just took over may hear the router it
// replaced, alive after all: the election settles that.
func Established(masterFor, interval time.Duration) bool { return masterFor >= 4*interval }

// FailOpen reports whether this node holds the VIP only because no node is
// healthy (it is master with the fail-open priority), and why it is
// unhealthy.
func (e *Elector) FailOpen() (bool, string) {
	st := e.inst.Status()
	return st.State == Master && st.Priority == FailOpenPriority, st.Failing
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
func (e *Elector) Served(member bool, at time.Time) { e.inst.Served(member, at) }

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
