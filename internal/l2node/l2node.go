// Package l2node makes the parts of an L2 node from its configuration: the
// election's configuration, the conflict check's timing, the identity's
// membership rule. cmd/novaedge-cpvip wires them to sockets and netlink;
// the simulation (internal/testing/sim) to its virtual segment. What both
// must agree on is decided here, once.
package l2node

import (
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/acd"
	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/l2"
	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// Election is the configuration of the node's one VRRP election. resume:
// the VIPs were found bound at start (reconcile.Reconciler.Resume). check:
// the conflict check runs, so a backup whose master went silent may ask
// whether the master's host still answers (ServedWait; the driver sets
// Ask and Heard).
func Election(cfg *config.Config, resume, check bool) vrrp.Config {
	c := vrrp.Config{VIPs: cfg.VIPAddress, VRID: uint8(cfg.VRID), Priority: uint8(cfg.Priority), FailOpen: cfg.FailOpen,
		Interval: cfg.AdvertInterval, Sends: cfg.AdvertsPerInterval, Preempt: cfg.Preempt, Resume: resume,
		SettleWithin: health.SettleWithin(cfg.HealthInterval)}
	if check {
		c.ServedWait = cfg.RestartWait
	}
	return c
}

// Guard sets the conflict check's timing for the group's advertisements:
// a node joining a running group hears the master within an interval, so
// it judges no answer before an interval and a half (only then is the
// master's answer for the VIP known as ours); and after a defence it waits
// for a router of ours that took the VIP on lost advertisements to hear our
// next one and let go (acd.DefendWaitFor).
func Guard(g *acd.Guard, cfg *config.Config) {
	g.Settle = cfg.AdvertInterval * 3 / 2
	g.DefendWait = acd.DefendWaitFor(cfg.AdvertInterval, cfg.AdvertsPerInterval)
}

// Heard is what the identity learns from an advertisement of our group
// from src that advertises interval: src is a member for a while
// (acd.MemberFor, counted with the longer of its interval and ours).
func Heard(known *acd.Known, cfg *config.Config, src netip.Addr, interval time.Duration) {
	known.Heard(src, acd.MemberFor(max(interval, cfg.AdvertInterval), cfg.RestartWait))
}

// Lifetime is the lifetime the holder binds its VIPs with (l2.Lifetime).
func Lifetime(cfg *config.Config) reconcile.Lifetime {
	return l2.Lifetime(cfg.AdvertInterval, cfg.RestartWait, cfg.ConflictCheck)
}
