package bgp

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/novaedge/cpvip/internal/reconcile"
)

// Routes is what the announcer needs of a speaker.
type Routes interface {
	Announce(vip netip.Prefix, demoted bool) error
	Withdraw(vip netip.Prefix) error
	Stop()
}

// Announcer holds VIPs in BGP mode: bound on lo (or the configured
// interface) so the node accepts their traffic, and announced while bound.
// Route changes happen in the reconcile loop's goroutine only, so a route is
// announced after its VIP is bound and withdrawn before it is removed.
type Announcer struct {
	routes Routes
	rec    *reconcile.Reconciler
	loop   *reconcile.Loop
	log    *slog.Logger
	// announced is how each VIP's route is out there; loop goroutine only.
	announced map[netip.Prefix]route
	retry     backoff     // loop goroutine only
	demoted   atomic.Bool // announce demoted routes (fail open)

	// Failures counts route changes that failed (each is retried).
	Failures atomic.Uint64
}

// route is how a VIP's route is announced.
type route uint8

const (
	withdrawn route = iota // not announced
	normal
	demotedRoute
)

// NewAnnouncer returns an Announcer binding through rec and announcing through routes.
func NewAnnouncer(routes Routes, rec *reconcile.Reconciler, events <-chan reconcile.Event,
	period time.Duration, log *slog.Logger) *Announcer {
	a := &Announcer{routes: routes, rec: rec, log: log, announced: map[netip.Prefix]route{}}
	a.loop = reconcile.NewLoop(rec, events, period, reconcile.Hooks{
		Before: a.before, Changed: a.changed, Reannounce: a.reannounce, Stopping: a.stopping})
	return a
}

// Hold binds vip and announces it (again, if it is bound already).
func (a *Announcer) Hold(vip netip.Prefix) {
	a.loop.Hold(vip)
}

// SetDemoted says whether routes are announced demoted from now on; a Hold
// afterwards announces a held VIP again with it.
func (a *Announcer) SetDemoted(d bool) { a.demoted.Store(d) }

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

// before withdraws the routes of VIPs to be released; one whose withdraw
// failed stays bound, for a route must never point at a node without the
// address. It also retries a failed announcement of a VIP bound already.
func (a *Announcer) before(desired map[netip.Prefix]bool) {
	for vip, hold := range desired {
		switch {
		case !hold && a.announced[vip] != withdrawn:
			if !a.withdraw(vip) {
				desired[vip] = true
			}
		case hold && a.retry.pending[vip] && a.rec.Held(vip):
			a.announce(vip)
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
	demoted := a.demoted.Load()
	if err := a.routes.Announce(vip, demoted); err != nil {
		a.failed(vip, "Announcing the VIP route failed", err)
		return
	}
	a.retry.done(vip)
	now := normal
	if demoted {
		now = demotedRoute
	}
	if a.announced[vip] != now {
		a.log.Info("VIP route announced", "address", vip, "demoted", demoted)
	}
	a.announced[vip] = now
}

func (a *Announcer) withdraw(vip netip.Prefix) bool {
	if err := a.routes.Withdraw(vip); err != nil {
		a.failed(vip, "Withdrawing the VIP route failed, keeping the VIP bound until it succeeds", err)
		return false
	}
	a.retry.done(vip)
	a.log.Info("VIP route withdrawn", "address", vip)
	a.announced[vip] = withdrawn
	return true
}

// failed counts a failed route change and runs the loop again after the
// backoff; the next pass retries whatever still differs.
func (a *Announcer) failed(vip netip.Prefix, msg string, err error) {
	a.Failures.Add(1)
	wait := a.retry.failed(vip)
	a.log.Error(msg, "address", vip, "error", err, "retry_in", wait)
	time.AfterFunc(wait, a.loop.Poke)
}
