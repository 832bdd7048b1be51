package bgp

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/novaedge/cpvip/internal/health"
)

// Demoter is what the elector needs of the announcer.
type Demoter interface {
	SetDemoted(bool)
}

// Elector is the holder decision of BGP mode: every healthy node announces
// the VIPs. With fail open, a node whose apiserver fails after having been
// healthy keeps its routes demoted (see Demotion) instead of withdrawing
// them, so the routers use it only while no node is healthy; a node never
// healthy since it started announces nothing. With fail open off, an
// unhealthy node withdraws.
type Elector struct {
	vips     []netip.Prefix
	demoter  Demoter
	failOpen bool
	log      *slog.Logger
	health   chan verdict // holds the latest verdict only

	mu      sync.Mutex // guards the fields below
	demoted bool
	reason  string
}

type verdict struct {
	ok     bool
	reason string
}

// NewElector returns an elector for vips announcing through demoter.
func NewElector(vips []netip.Prefix, demoter Demoter, failOpen bool, log *slog.Logger) *Elector {
	return &Elector{vips: vips, demoter: demoter, failOpen: failOpen, log: log, health: make(chan verdict, 1)}
}

// Health implements the agent's Elector: a change of state announces,
// demotes or withdraws. Only the agent's goroutine calls it.
func (e *Elector) Health(tr health.Transition) {
	if tr.Changed {
		e.setHealthy(tr.State == health.Healthy, tr.Reason())
	}
}

func (e *Elector) setHealthy(ok bool, reason string) {
	select {
	case <-e.health: // drop a value not yet taken: the latest wins
	default:
	}
	e.health <- verdict{ok, reason}
}

// FailOpen reports whether this node announces demoted routes because its
// apiserver failed, and why.
func (e *Elector) FailOpen() (bool, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.demoted, e.reason
}

// Run implements the agent's Elector.
func (e *Elector) Run(ctx context.Context, decide func(netip.Prefix, bool)) {
	part := NewPart(e.failOpen)
	for {
		select {
		case <-ctx.Done():
			return
		case v := <-e.health:
			st := part.Health(v.ok)
			switch st {
			case Announced:
				e.log.Info("API server is healthy, binding VIP", "vip", e.vips)
			case Demoted:
				e.log.Warn("API server is unhealthy, releasing VIP", "vip", e.vips, "bgp",
					"announcing a demoted route (AS path +3, GRACEFUL_SHUTDOWN community): routers use healthy nodes, and this one only while none is (fail open)", "reason", v.reason)
			default:
				e.log.Warn("API server is unhealthy, releasing VIP", "vip", e.vips, "reason", v.reason)
			}
			e.mu.Lock()
			e.demoted, e.reason = st == Demoted, v.reason
			e.mu.Unlock()
			e.demoter.SetDemoted(st == Demoted)
			for _, vip := range e.vips {
				decide(vip, st.Holds())
			}
		}
	}
}
