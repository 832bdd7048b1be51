package agent

import (
	"context"
	"log/slog"
	"net/netip"

	"github.com/novaedge/cpvip/internal/health"
)

// HealthElector holds every VIP while the local apiserver is healthy: the
// simplest elector, for the agent's tests.
type HealthElector struct {
	vips      []netip.Prefix
	log       *slog.Logger
	candidate chan bool // holds the latest candidacy only
}

// NewHealthElector returns an elector for vips.
func NewHealthElector(vips []netip.Prefix, log *slog.Logger) *HealthElector {
	return &HealthElector{vips: vips, log: log, candidate: make(chan bool, 1)}
}

// Health implements Elector. Only the agent's goroutine calls it.
func (e *HealthElector) Health(tr health.Transition) {
	if !tr.Changed {
		return
	}
	select {
	case <-e.candidate: // drop a value not yet taken: the latest wins
	default:
	}
	e.candidate <- tr.State == health.Healthy
}

// Run implements Elector.
func (e *HealthElector) Run(ctx context.Context, decide func(netip.Prefix, bool)) {
	for {
		select {
		case <-ctx.Done():
			return
		case ok := <-e.candidate:
			if ok {
				e.log.Info("API server is healthy, binding VIP", "vip", e.vips)
			} else {
				e.log.Warn("API server is unhealthy, releasing VIP", "vip", e.vips)
			}
			for _, vip := range e.vips {
				decide(vip, ok)
			}
		}
	}
}
