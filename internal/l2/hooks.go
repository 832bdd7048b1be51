package l2

import (
	"log/slog"
	"net/netip"

	"github.com/novaedge/cpvip/internal/reconcile"
)

// Bursts starts and stops each VIP's announcements (a Burst each): the
// node's announcements (internal/l2node).
type Bursts interface {
	Start(vip netip.Addr) // a new burst, in place of one running
	Stop(vip netip.Addr)
}

// Hooks are the reconcile loop's hooks that keep the bursts in step with
// its passes: a VIP the election let go is not announced on from its word
// (before the pass: an interface deleted takes the VIP with it and no pass
// removes anything, and a burst retrying its failed send would announce the
// VIP on the interface made again, with the new MAC, while another node
// held it); a VIP bound or restored is announced, one removed, lost or
// lapsed no longer; one asked again (or every held one, the link up) is
// announced anew. lapsed, when set, is told that a held VIP's lifetime ran
// out (the election binds it again if still its master). Each change is
// logged on log for the interface.
func Hooks(b Bursts, log *slog.Logger, iface string, lapsed func()) reconcile.Hooks {
	return reconcile.Hooks{
		Before: func(desired map[netip.Prefix]bool) {
			for vip, want := range desired {
				if !want {
					b.Stop(vip.Addr())
				}
			}
		},
		Changed: func(c reconcile.Change) {
			reconcile.LogChange(log, "l2", c)
			switch c.Action {
			case reconcile.Installed, reconcile.Fixed:
				b.Start(c.VIP.Addr())
			case reconcile.Removed, reconcile.Lost, reconcile.Lapsed:
				b.Stop(c.VIP.Addr())
			}
		},
		Lapsed: func(vip netip.Prefix) {
			b.Stop(vip.Addr())
			if lapsed != nil {
				lapsed()
			}
		},
		Reannounce: func(held []netip.Prefix, reason string) {
			for _, vip := range held {
				if reason == "link up" {
					log.Info("Link is up, announcing VIP again", "address", vip, "interface", iface)
				}
				b.Start(vip.Addr())
			}
		},
	}
}
