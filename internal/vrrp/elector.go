package vrrp

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/health"
)

// Elector is the node's one VRRP instance for every VIP as the rest of the
// daemon sees it from other goroutines: health and reloads handed to it,
// its status read. Its Run is the node's (internal/l2node).
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
