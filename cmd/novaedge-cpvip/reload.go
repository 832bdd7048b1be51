package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/l2node"
	"github.com/novaedge/cpvip/internal/status"
)

// live is what a reload may change in the running daemon; the L2 parts are
// nil in bgp mode.
type live struct {
	level     *slog.LevelVar
	checkers  []tuner // the node's own check, and spreading's of the other apiservers
	elector   l2node.ElectionTuner
	announcer garpTuner
}

// garpTuner takes a reload's announcement settings (l2node.Node).
type garpTuner interface {
	SetGARP(repeat int, refresh time.Duration)
}

// tuner takes a reload's health timing.
type tuner interface{ Tune(health.Timing) }

// live is what a reload may change in d.
func (d *daemon) live(level *slog.LevelVar) live {
	return live{level: level, checkers: d.tuners(), elector: d.electorTuner(), announcer: d.garpTuner()}
}

// garpTuner is the node whose announcements a reload retunes: nil in bgp
// mode (as electorTuner).
func (d *daemon) garpTuner() garpTuner {
	if d.l2 == nil {
		return nil
	}
	return d.l2
}

// electorTuner is the election a reload retunes: nil in bgp mode (an
// interface holding a nil *vrrp.Elector is not nil: apply would call it).
func (d *daemon) electorTuner() l2node.ElectionTuner {
	if d.vrrp == nil {
		return nil
	}
	return d.vrrp
}

// tuners are the health checks a reload retimes.
func (d *daemon) tuners() []tuner {
	ts := []tuner{d.checker}
	if d.spread != nil {
		ts = append(ts, d.spread)
	}
	return ts
}

// reloadOn applies the env file again on every signal from hup until ctx
// ends (SIGHUP, `systemctl reload`). What can change live is applied; what
// needs a restart is named in one log line and left as it was; an invalid
// file keeps the running configuration. Nothing here binds or releases the
// VIP: the election decides that from the values applied.
func reloadOn(ctx context.Context, hup <-chan os.Signal, r *config.Reloader, running *config.Config, parts live, counts *status.Reloads, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if !r.HasFile() {
			log.Warn("Reload asked, but there is no env file to read again (--env-file): nothing changed")
			counts.Refused()
			continue
		}
		next, err := r.Load()
		if err != nil {
			log.Error("Reload failed: keeping the running configuration", "error", err)
			counts.Refused()
			continue
		}
		merged, applied, restart, err := config.Reload(running, next)
		if err != nil {
			log.Error("Reload failed: keeping the running configuration", "error", err)
			counts.Refused()
			continue
		}
		if len(restart) > 0 {
			log.Warn("Reload: these need a restart and were left as they were", "variables", restart)
		}
		prev := running
		running = merged
		parts.apply(prev, running)
		counts.Applied()
		log.Info("Configuration reloaded", "applied", applied)
	}
}

// apply gives the parts the live values that differ between prev and cfg.
func (p live) apply(prev, cfg *config.Config) {
	p.level.Set(slog.Level(cfg.LogLevel))
	timing := func(c *config.Config) health.Timing {
		return health.Timing{Interval: c.HealthInterval, FastInterval: c.HealthFastInterval,
			Timeout: c.HealthTimeout, HungAfter: c.HealthHungAfter, FailThreshold: c.FailThreshold, RiseThreshold: c.RiseThreshold}
	}
	if timing(prev) != timing(cfg) {
		for _, c := range p.checkers {
			c.Tune(timing(cfg))
		}
	}
	if p.elector != nil {
		l2node.Reload(p.elector, prev, cfg)
	}
	if p.announcer != nil && (prev.GARPRepeat != cfg.GARPRepeat || prev.GARPRefresh != cfg.GARPRefresh) {
		p.announcer.SetGARP(cfg.GARPRepeat, cfg.GARPRefresh)
	}
}
