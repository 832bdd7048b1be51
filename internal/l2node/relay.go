package l2node

import (
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/acd"
)

// Owners are those the conflict check's notes go to.
type Owners interface {
	Poke()                            // a verdict may have changed: the reconcile loop looks again (Changed)
	Contested(vip netip.Addr)         // another router of our group announced vip (Contested)
	Defend(vip netip.Addr)            // this node defends vip against another host's answer (Defend)
	Served(member bool, at time.Time) // another host answered for a VIP (Served): the election's question
}

// Relay hands each of the conflict check's notes to its owner, in order.
func Relay(notes []acd.Note, to Owners) {
	for _, n := range notes {
		switch n.Kind {
		case acd.Changed:
			to.Poke()
		case acd.Contested:
			to.Contested(n.VIP)
		case acd.Defend:
			to.Defend(n.VIP)
		case acd.Served:
			to.Served(n.Member, n.At)
		}
	}
}
