package vrrp

import (
	"time"

	"github.com/novaedge/cpvip/internal/health"
)

// vote is what the local apiserver's health makes of this node's part in
// the election, as of the latest transition the Core took (Core.Health).
type vote struct {
	state   health.State // as last taken: Unknown until the first verdict
	seen    bool         // healthy at least once since start (fail open)
	certain bool         // the latest failure leaves no doubt (health.Result.Certain)
	base    uint8        // our priority while healthy (Config.Priority; a reload changes it)
}

// ElectionPriority is the priority a node takes part in the election
// with: its own while healthy; FailOpenPriority while unhealthy with fail
// open, once it has been healthy since it started; else 0, not a
// candidate.
//
// Fail open: a node whose apiserver fails stays in the election with
// FailOpenPriority once it has been healthy since it started, so the VIP
// stays where it is while no node is healthy, still moves if its holder
// dies, and goes to a healthy node within that node's skew time once that
// node's health has settled (health.SettleRun). A node never healthy since
// it started takes no part, so nothing is bound before bootstrap. With
// fail open off, an unhealthy node leaves the election.
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

// Health takes a transition of the health checker: whether this node has
// settled, whether it is in doubt of its apiserver, whether its apiserver
// certainly does not serve, and the priority its health gives it. What it
// changes is measured against the state last taken, not the transition's
// Changed, so a driver that drops old transitions (a full queue) loses no
// state — only the edge of a certain failure that an uncertain one
// followed before either was taken.
func (c *Core) Health(tr health.Transition, now time.Time) {
	v := &c.vote
	c.SetUnsettled(!tr.Settled, now) // before the priority: a node healthy again takes over only settled
	// After the priority: a doubt that ends unhealthy takes over nothing.
	defer c.setInDoubt(tr.InDoubt, now)
	certain := tr.State != health.Healthy && tr.Certain
	if tr.State == v.state {
		// Settled only, or certain now while unhealthy already (failing
		// on time-outs, then refused): the election hears the failure
		// again, certain, and a holder hands over.
		if certain && !v.certain {
			v.certain = true
			c.log.Warn("API server does not serve at all now, handing the VIP over", "reason", tr.Last.Reason)
			c.elect(tr.Reason(), now)
		}
		v.certain = certain
		return
	}
	v.state, v.certain = tr.State, certain
	c.elect(tr.Reason(), now)
}

// setInDoubt hands the machine whether we are in doubt of our apiserver
// (Params.InDoubt) and says when that changes.
func (c *Core) setInDoubt(d bool, now time.Time) {
	if d == c.m.p.InDoubt {
		return
	}
	if d {
		c.log.Debug("In doubt of the API server: it closed the kept connection, checking now")
	} else {
		c.log.Debug("No longer in doubt of the API server")
	}
	c.m.SetInDoubt(d, now)
}

// SetBase changes our priority while healthy (a reload): a healthy node
// takes part with it at once.
func (c *Core) SetBase(p uint8, now time.Time) {
	c.vote.base = p
	if c.vote.state == health.Healthy {
		c.SetPriority(p, "", now)
	}
}

// Failing says why the apiserver is unhealthy; empty while it is healthy.
func (c *Core) Failing() string { return c.failing }

// elect gives the machine the priority the latest verdict makes; why is
// the failure's reason.
func (c *Core) elect(why string, now time.Time) {
	v := &c.vote
	ok := v.state == health.Healthy
	v.seen = v.seen || ok
	p := ElectionPriority(ok, v.seen, c.cfg.FailOpen, v.base)
	leading := c.m.State() == Master
	switch {
	case ok:
		why = ""
		c.log.Info("API server is healthy, joining VRRP election", "priority", p)
	case p == FailOpenPriority && leading && v.certain:
		c.log.Warn("API server is unhealthy, releasing VIP", "vrrp", "sending priority 0: a healthy node takes it within its skew time; kept here with the fail-open priority if none does", "reason", why)
	case p == FailOpenPriority && leading:
		c.log.Warn("API server is unhealthy, releasing VIP", "vrrp", "fail-open priority 1: a settled healthy node takes it within its skew time; kept here while none is", "reason", why)
	case p == FailOpenPriority:
		c.log.Warn("API server is unhealthy, staying in the VRRP election with the fail-open priority", "priority", p, "reason", why)
	case leading:
		c.log.Warn("API server is unhealthy, releasing VIP", "vrrp", "sending priority 0", "reason", why)
	default:
		c.log.Warn("API server is unhealthy, leaving VRRP election", "reason", why)
	}
	c.SetPriority(p, why, now) // certain: v.certain, false while healthy
}
