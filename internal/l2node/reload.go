package l2node

import (
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
)

// ElectionTuner takes a reload's election settings (vrrp.Elector).
type ElectionTuner interface {
	SetPriority(uint8)
	SetPreempt(bool)
	SetSettleWithin(time.Duration)
}

// Reload gives the election the settings that differ between prev and
// cfg, in this order: the priority, preemption, and the settling bound
// that follows HEALTH_INTERVAL (health.SettleWithin).
func Reload(e ElectionTuner, prev, cfg *config.Config) {
	if prev.Priority != cfg.Priority {
		e.SetPriority(uint8(cfg.Priority))
	}
	if prev.Preempt != cfg.Preempt {
		e.SetPreempt(cfg.Preempt)
	}
	if prev.HealthInterval != cfg.HealthInterval {
		e.SetSettleWithin(health.SettleWithin(cfg.HealthInterval))
	}
}
