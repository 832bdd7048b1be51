package agent

import (
	"context"
	"fmt"
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
	// SetHealthy says whether the local apiserver is healthy, and why not.
	SetHealthy(ok bool, reason string)
	// Run decides until ctx ends, calling decide on every change. When it
	// returns, this node has resigned (VRRP: priority 0 sent).
	Run(ctx context.Context, decide func(vip netip.Prefix, hold bool))
}

// Settler is an elector that hands the VIP from a failing holder only to a
// node whose health has settled (L2: vrrp.Elector); the agent tells it
// before each health change.
type Settler interface {
	SetSettled(settled bool)
}

// Resigner is an elector whose holder hands the VIP over at once when its
// apiserver certainly does not serve (health.Result.Certain) rather than
// keep it until a settled node takes it (L2: vrrp.Elector); the agent tells
// it before each health change.
type Resigner interface {
	SetCertain(certain bool)
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
	Announcer Announcer
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
	go func() { a.Announcer.Run(annCtx); close(annDone) }()
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
			if hold {
				a.Announcer.Hold(vip)
			} else {
				a.Announcer.Release(vip)
			}
		})
		close(electDone)
	}()

	certain := false // as last told to the elector
	for {
		select {
		case tr := <-transitions:
			if s, ok := a.Elector.(Settler); ok {
				s.SetSettled(tr.Settled)
			}
			r, resigner := a.Elector.(Resigner)
			if resigner {
				r.SetCertain(tr.Certain)
			}
			if !tr.Changed {
				// Settled only, or certain now while unhealthy already
				// (failing on time-outs, then refused): the elector hears
				// the failure again, certain, and a holder hands over.
				if resigner && tr.Certain && !certain {
					a.Log.Warn("API server does not serve at all now, handing the VIP over", "reason", tr.Last.Reason)
					a.Elector.SetHealthy(false, tr.Last.Reason)
				}
				certain = tr.Certain
				continue
			}
			certain = tr.Certain
			a.Log.Info("API server health changed", "state", tr.State, "status", tr.Last.Status, "reason", tr.Last.Reason)
			if tr.State == health.Draining {
				a.Log.Warn("API server is shutting down, handing the VIP over")
			}
			reason := tr.Last.Reason
			if reason == "" {
				reason = fmt.Sprintf("status %d", tr.Last.Status)
			}
			a.record(tr.State.String(), "", reason)
			a.Elector.SetHealthy(tr.State == health.Healthy, reason)
			if a.Local != nil {
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
