package vrrp

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
)

// Elector runs one Instance per VIP (one per address family) and implements
// the agent's elector: health makes the node a candidate in every instance.
type Elector struct {
	instances []*Instance
	log       *slog.Logger
}

// NewElector returns an elector over instances.
func NewElector(instances []*Instance, log *slog.Logger) *Elector {
	return &Elector{instances: instances, log: log}
}

// SetCandidate implements the agent's Elector.
func (e *Elector) SetCandidate(healthy bool) {
	switch {
	case healthy:
		e.log.Info("API server is healthy, joining VRRP election")
	case e.holdsAny():
		e.log.Warn("API server is unhealthy, releasing VIP", "vrrp", "sending priority 0")
	default:
		e.log.Warn("API server is unhealthy, leaving VRRP election")
	}
	for _, in := range e.instances {
		in.SetCandidate(healthy)
	}
}

func (e *Elector) holdsAny() bool {
	for _, in := range e.instances {
		if in.Status().State == Master {
			return true
		}
	}
	return false
}

// Run implements the agent's Elector: it runs every instance until ctx ends.
func (e *Elector) Run(ctx context.Context, decide func(netip.Prefix, bool)) {
	var wg sync.WaitGroup
	var mu sync.Mutex // decide is called from several instances
	held := map[netip.Prefix]bool{}
	for _, in := range e.instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.Run(ctx, func(vip netip.Prefix, hold bool) {
				mu.Lock()
				defer mu.Unlock()
				if hold && !held[vip] { // not for a re-announcement of a VIP held already
					e.log.Info("API server is healthy, binding VIP", "vip", vip, "vrrp", "master")
				}
				held[vip] = hold
				decide(vip, hold)
			})
		}()
	}
	wg.Wait()
}

// Statuses returns a snapshot of every instance.
func (e *Elector) Statuses() []Status {
	out := make([]Status, len(e.instances))
	for i, in := range e.instances {
		out[i] = in.Status()
	}
	return out
}
