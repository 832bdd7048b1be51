package main

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
)

// fakeElector records the settle bounds a reload gives it.
type fakeElector struct{ settle []time.Duration }

func (*fakeElector) SetPriority(uint8)                 {}
func (*fakeElector) SetPreempt(bool)                   {}
func (e *fakeElector) SetSettleWithin(d time.Duration) { e.settle = append(e.settle, d) }

// TestReloadOfHealthIntervalRetimesSettleWithin: a reload that changes
// HEALTH_INTERVAL gives the elector health.SettleWithin of the new interval.
func TestReloadOfHealthIntervalRetimesSettleWithin(t *testing.T) {
	e := &fakeElector{}
	p := live{level: new(slog.LevelVar), elector: e}
	prev := &config.Config{HealthInterval: time.Second, Priority: 100}
	next := &config.Config{HealthInterval: 3 * time.Second, Priority: 100}
	p.apply(prev, next)
	if want := []time.Duration{health.SettleWithin(next.HealthInterval)}; !slices.Equal(e.settle, want) {
		t.Fatalf("HEALTH_INTERVAL 1s → 3s: SetSettleWithin(%v), want %v", e.settle, want)
	}
	p.apply(next, next)
	if len(e.settle) != 1 {
		t.Fatalf("a reload with the same HEALTH_INTERVAL set the bound again: %v", e.settle)
	}
}

// TestReloadInBGPModeHasNoElector: without VRRP the reload's elector is nil,
// so a changed election setting touches nothing.
func TestReloadInBGPModeHasNoElector(t *testing.T) {
	p := (&daemon{}).live(new(slog.LevelVar))
	p.checkers = nil // this daemon has no health checker to retime
	if p.elector != nil {
		t.Fatal("no vrrp.Elector, yet the reload has an elector")
	}
	p.apply(
		&config.Config{HealthInterval: time.Second, Priority: 100},
		&config.Config{HealthInterval: 3 * time.Second, Priority: 120, Preempt: true})
}
