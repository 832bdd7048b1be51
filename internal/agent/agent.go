package agent

import (
	"context"
	"log/slog"
	"net/netip"

	"github.com/novaedge/cpvip/internal/health"
)

// HealthChecker reports health transitions until its context ends.
type HealthChecker interface {
	Run(ctx context.Context, out chan<- health.Transition)
}

// Elector decides whether this node holds each VIP.
type Elector interface {
	// Health hands it the health checker's latest transition (L2: the
	// priority, settling and certainty in the election, vrrp.Core.Health;
	// BGP: announce, demote or withdraw).
	Health(tr health.Transition)
	// Run decides until ctx ends, calling decide on every change. When it
	// returns, this node has resigned (VRRP: priority 0 sent).
	Run(ctx context.Context, decide func(vip netip.Prefix, hold bool))
}

// Announcer makes hold decisions true in the kernel and on the wire.
type Announcer interface {
	Hold(vip netip.Prefix)
	Release(vip netip.Prefix)
	// Run keeps the decisions true until ctx ends and returns once every VIP is released.
	Run(ctx context.Context)
}

// Journal records transitions for status: to is held, released, healthy or unhealthy.
type Journal interface {
	Add(to, vip, reason string)
}

// LocalHealth learns the local apiserver's health (L2 spreading: the
// local backend).
type LocalHealth interface {
	SetLocal(health.State)
}

// Agent is the daemon's main loop.
type Agent struct {
	Health    HealthChecker
	Elector   Elector
	Announcer Announcer // nil: the elector carries out its decisions itself (the L2 node, internal/l2node)
	Log       *slog.Logger
	Journal   Journal     // optional
	Local     LocalHealth // optional
}

func (a *Agent) record(to, vip, reason string) {
	if a.Journal != nil {
		a.Journal.Add(to, vip, reason)
	}
}

// Run runs until ctx ends, then resigns, releases everything and returns.
func (a *Agent) Run(ctx context.Context) {
	healthCtx, stopHealth := context.WithCancel(context.Background())
	electCtx, stopElect := context.WithCancel(context.Background())
	annCtx, stopAnn := context.WithCancel(context.Background())
	defer stopHealth()
	defer stopElect()
	defer stopAnn()

	transitions := make(chan health.Transition)
	go a.Health.Run(healthCtx, transitions)
	annDone := make(chan struct{})
	if a.Announcer != nil {
		go func() { a.Announcer.Run(annCtx); close(annDone) }()
	} else {
		close(annDone)
	}
	electDone := make(chan struct{})
	go func() {
		held := map[netip.Prefix]bool{} // this goroutine only
		a.Elector.Run(electCtx, func(vip netip.Prefix, hold bool) {
			// A hold of a VIP held already is a re-announcement, not a transition.
			if hold != held[vip] {
				held[vip] = hold
				a.record(map[bool]string{true: "held", false: "released"}[hold], vip.String(),
					map[bool]string{true: "elected", false: "not elected"}[hold])
			}
			switch {
			case a.Announcer == nil: // the elector carries out its own decisions
			case hold:
				a.Announcer.Hold(vip)
			default:
				a.Announcer.Release(vip)
			}
		})
		close(electDone)
	}()

	for {
		select {
		case tr := <-transitions:
			if tr.Changed { // said and journaled before what the elector makes of it
				a.Log.Info("API server health changed", "state", tr.State, "status", tr.Last.Status, "reason", tr.Last.Reason)
				if tr.State == health.Draining {
					a.Log.Warn("API server is shutting down, handing the VIP over")
				}
				a.record(tr.State.String(), "", tr.Reason())
			}
			a.Elector.Health(tr)
			if tr.Changed && a.Local != nil {
				a.Local.SetLocal(tr.State)
			}
			continue
		case <-ctx.Done():
		}
		break
	}
	a.Log.Info("Shutting down: releasing everything this node holds")
	stopHealth()
	stopElect()
	<-electDone
	stopAnn()
	<-annDone
	a.Log.Info("Shutdown complete")
}
