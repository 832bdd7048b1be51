package bgp

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/reconcile"
)

// Routes is what the announcer needs of a speaker.
type Routes interface {
	Announce(vip netip.Prefix) error
	Withdraw(vip netip.Prefix) error
	Stop()
}

// Announcer holds VIPs in BGP mode: bound on lo (or the configured
// interface) so the node accepts their traffic, and announced while bound.
// Route changes happen in the reconcile loop's goroutine only, so a route is
// announced after its VIP is bound and withdrawn before it is removed.
type Announcer struct {
	routes    Routes
	loop      *reconcile.Loop
	log       *slog.Logger
	announced map[netip.Prefix]bool // loop goroutine only
}

// NewAnnouncer returns an Announcer binding through rec and announcing through routes.
func NewAnnouncer(routes Routes, rec *reconcile.Reconciler, events <-chan reconcile.Event,
	period time.Duration, log *slog.Logger) *Announcer {
	a := &Announcer{routes: routes, log: log, announced: map[netip.Prefix]bool{}}
	a.loop = reconcile.NewLoop(rec, events, period, reconcile.Hooks{
		Before: a.before, Changed: a.changed, Reannounce: a.reannounce, Stopping: a.stopping})
	return a
}

// Hold binds vip and announces it (again, if it is bound already).
func (a *Announcer) Hold(vip netip.Prefix) {
	a.loop.Hold(vip)
}

// Release withdraws vip, then removes it.
func (a *Announcer) Release(vip netip.Prefix) { a.loop.Set(vip, false) }

// Run keeps the VIPs as decided until ctx ends; then, in the loop's
// goroutine, it withdraws every route, stops the speaker (Cease to every
// peer) and removes the VIPs.
func (a *Announcer) Run(ctx context.Context) { a.loop.Run(ctx) }

func (a *Announcer) stopping() {
	a.log.Info("VIP routes withdrawn, stopping BGP (Cease to every peer)")
	a.routes.Stop()
}

func (a *Announcer) before(desired map[netip.Prefix]bool) {
	for vip, hold := range desired {
		if !hold && a.announced[vip] {
			a.withdraw(vip)
		}
	}
}

func (a *Announcer) changed(c reconcile.Change) {
	reconcile.LogChange(a.log, "bgp", c)
	if c.Action == reconcile.Installed || c.Action == reconcile.Fixed {
		a.announce(c.VIP)
	}
}

func (a *Announcer) reannounce(held []netip.Prefix, _ string) {
	for _, vip := range held {
		a.announce(vip)
	}
}

func (a *Announcer) announce(vip netip.Prefix) {
	if err := a.routes.Announce(vip); err != nil {
		a.log.Error("Announcing the VIP route failed", "address", vip, "error", err)
		return
	}
	if !a.announced[vip] {
		a.log.Info("VIP route announced", "address", vip)
	}
	a.announced[vip] = true
}

func (a *Announcer) withdraw(vip netip.Prefix) {
	if err := a.routes.Withdraw(vip); err != nil {
		a.log.Error("Withdrawing the VIP route failed", "address", vip, "error", err)
		return
	}
	a.log.Info("VIP route withdrawn", "address", vip)
	a.announced[vip] = false
}
