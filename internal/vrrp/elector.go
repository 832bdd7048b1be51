package vrrp

import "time"

// Elector is the node's one VRRP instance for every VIP as the rest of the
// daemon sees it from other goroutines: reloads handed to it, its status
// read. The node drives it (internal/l2node).
type Elector struct{ inst *Instance }

// NewElector returns an elector over inst.
func NewElector(inst *Instance) *Elector { return &Elector{inst: inst} }

// SetPriority changes our priority while healthy (a reload); a healthy
// node takes part with it at once.
func (e *Elector) SetPriority(p uint8) { e.inst.SetPriority(p) }

// SetPreempt changes whether a stronger backup takes the VIP from a weaker master.
func (e *Elector) SetPreempt(on bool) { e.inst.SetPreempt(on) }

// SetSettleWithin changes how long settling holds a healthy backup back
// from a fail-open master (Config.SettleWithin).
func (e *Elector) SetSettleWithin(d time.Duration) { e.inst.SetSettleWithin(d) }

// Established says whether a master for masterFor has been one longer
// than a backup waits for a master (3 intervals and the skew at most):
// another router's announcement of the VIP is then a stray to answer
// (l2.Again). One that just took over may hear the router it
// replaced, alive after all: the election settles that.
func Established(masterFor, interval time.Duration) bool { return masterFor >= 4*interval }

// FailOpen reports whether this node holds the VIP only because no node is
// healthy (it is master with the fail-open priority), and why it is
// unhealthy.
func (e *Elector) FailOpen() (bool, string) { return e.inst.Status().FailOpen() }

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
