package vrrp

import (
	"net/netip"
	"slices"
	"sync"
)

// Foreign is another VRRP group heard on our VRID: a router whose
// advertisements list other addresses than ours. It is not part of our
// election (keepalived drops such advertisements too).
type Foreign struct {
	Source    netip.Addr
	Addresses []netip.Addr
}

// maxForeign bounds the sources remembered for status and the log.
const maxForeign = 16

// foreignGroups remembers the foreign sources heard; safe for concurrent use.
type foreignGroups struct {
	mu   sync.Mutex
	seen []Foreign
}

// add records src and reports whether it is new (to be logged once).
// Past maxForeign sources, new ones are neither kept nor logged.
func (f *foreignGroups) add(src netip.Addr, addrs []netip.Addr) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) >= maxForeign || slices.ContainsFunc(f.seen, func(g Foreign) bool { return g.Source == src }) {
		return false
	}
	f.seen = append(f.seen, Foreign{Source: src, Addresses: slices.Clone(addrs)})
	return true
}

func (f *foreignGroups) snapshot() []Foreign {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// ours reports whether an advertisement's address list is exactly ours: one
// election per family, so one address, the VIP of that family.
func ours(addrs []netip.Addr, vip netip.Addr) bool {
	return len(addrs) == 1 && addrs[0] == vip
}

// Drop says why advertisement a, from src, heard on the transport of the
// k-th VIP whose own address is self, is not for this election; empty: it
// is. Another VRID is another virtual router; our own comes back on a
// multicast group; another address list on our VRID is another group.
func (c Config) Drop(a Advertisement, src, self netip.Addr, k int) Reason {
	switch {
	case a.VRID != c.VRID:
		return DropVRID
	case src == self:
		return DropOwn
	case !ours(a.Addresses, c.VIPs[k].Addr()):
		return DropForeign
	}
	return ""
}
