package acd

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// ResolveGrace is how long after a member without a neighbour entry was
// first heard a claim from an unknown hardware address may still be that
// member's (Resolving): the kernel resolves it in milliseconds, and a new
// master's gratuitous ARP follows its advertisement by less.
const ResolveGrace = 100 * time.Millisecond

// maxHeard bounds the members learned from their advertisements (a group
// has a handful; a flood of forged advertisements evicts the least
// recently heard first, never a configured peer).
const maxHeard = 64

// MemberFor is how long a router learned from its advertisements stays a
// member after its latest one, for a router advertising every interval in
// a group whose backups wait restartWait for a silent master whose host
// answers:
// twice the longest a member's kernel may hold the VIP after its daemon
// went silent (the backups' wait and a master down interval). A host whose
// advertisement was forged, or that left the group, is a stranger again
// once that has passed: its answers for the VIP are a conflict.
func MemberFor(interval, restartWait time.Duration) time.Duration {
	return 2 * (restartWait + 4*interval)
}

// Known is the Identity of a node: the hardware addresses of its own
// interfaces (Linux answers ARP for a local address on any of them) and of
// the routers of its VRRP group. It reads nothing itself: the kernel's link
// and neighbour tables reach it as events (WatchKernel), the group's
// members from the configured unicast peers and from every advertisement
// heard (Heard). Ours and Resolving are lookups, never I/O: a frame from a
// stranger costs a map read and a scan of the members being resolved, and
// a failure to read the kernel keeps what was known.
type Known struct {
	resolve func(netip.Addr) // asks the kernel to resolve a member without an entry; nil: nothing
	grew    chan struct{}    // a MAC became ours or a member was resolved (Grew)
	now     func() time.Time

	mu    sync.Mutex
	own   map[int]string         // interface index -> hardware address
	neigh map[netip.Addr]string  // the neighbour table's entries with a hardware address
	last  map[netip.Addr]string  // the latest hardware address of each address the table had
	peers map[netip.Addr]bool    // configured unicast peers: members for good
	heard map[netip.Addr]heardAt // members heard advertising -> when last
	// resolving: members heard without a neighbour entry -> when first
	// heard so (Resolving), kept past ResolveGrace so that later
	// advertisements do not extend it; gone when their entry arrives or
	// goes, or they are forgotten.
	resolving map[netip.Addr]time.Time
	seq       uint64
	ours      map[string]bool // derived: the hardware addresses of the interfaces and the members
}

// heardAt is when a member last advertised (the clock's time, and a
// sequence number that orders advertisements of one instant) and until
// when it stays one (zero: for good).
type heardAt struct {
	at, until time.Time
	seq       uint64
}

// NewKnown returns the identity of a node whose group has the unicast
// peers (none: multicast, members are learned as they advertise, Heard).
// now is the clock (nil: time.Now); resolve asks the kernel to resolve a
// member's address (NTF_USE; nil: nothing is asked).
func NewKnown(peers []netip.Addr, now func() time.Time, resolve func(netip.Addr)) *Known {
	if now == nil {
		now = time.Now
	}
	k := &Known{resolve: resolve, grew: make(chan struct{}, 1), now: now,
		own: map[int]string{}, neigh: map[netip.Addr]string{}, last: map[netip.Addr]string{},
		peers: map[netip.Addr]bool{}, heard: map[netip.Addr]heardAt{}, resolving: map[netip.Addr]time.Time{},
		ours: map[string]bool{}}
	for _, p := range peers {
		k.peers[p.WithZone("")] = true
	}
	return k
}

// Grew receives when a hardware address became ours, or a member heard
// a moment ago was resolved, since it last did: claims judged or held
// back before may be a member's (Guard.Rejudge).
func (k *Known) Grew() <-chan struct{} { return k.grew }

// Ours implements Identity.
func (k *Known) Ours(mac net.HardwareAddr) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.expire()
	return k.ours[string(mac)]
}

// expire forgets the members whose membership has run out; under mu.
func (k *Known) expire() {
	now, gone := k.now(), false
	for a, h := range k.heard {
		if !h.until.IsZero() && now.After(h.until) {
			delete(k.heard, a)
			delete(k.resolving, a)
			gone = true
		}
	}
	if gone {
		k.rebuild()
	}
}

// Self implements Identity.
func (k *Known) Self(mac net.HardwareAddr) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, own := range k.own {
		if own == string(mac) {
			return true
		}
	}
	return false
}

// Refresh implements Identity: it asks the kernel to resolve the members
// the neighbour table lacks; the answers arrive as events.
func (k *Known) Refresh() {
	if k.resolve == nil {
		return
	}
	for _, m := range k.unresolved() {
		k.resolve(m)
	}
}

// unresolved lists the members without a neighbour entry.
func (k *Known) unresolved() []netip.Addr {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.expire()
	var out []netip.Addr
	for m := range k.members() {
		if _, ok := k.neigh[m]; !ok {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare) // asked in one order, run after run
	return out
}

// members yields every member's address; under mu.
func (k *Known) members() func(func(netip.Addr) bool) {
	return func(yield func(netip.Addr) bool) {
		for p := range k.peers {
			if !yield(p) {
				return
			}
		}
		for h := range k.heard {
			if !k.peers[h] && !yield(h) {
				return
			}
		}
	}
}

// isMember says whether a is a member; under mu.
func (k *Known) isMember(a netip.Addr) bool {
	_, heard := k.heard[a]
	return k.peers[a] || heard
}

// Heard records an advertisement of our group from src: src is a member
// for lasts (MemberFor; 0: for good).
// One whose hardware address the table lacks is resolved at once (every
// advertisement until it is: an entry the kernel flushed, a resolution
// lost), so that its answer for the VIP, which follows its advertisement
// when it becomes master, is known as ours. Meanwhile answers from
// hardware addresses not known wait (Resolving), for ResolveGrace from
// the first advertisement without an entry, not from each.
func (k *Known) Heard(src netip.Addr, lasts time.Duration) {
	src = src.WithZone("")
	k.mu.Lock()
	k.expire()
	_, known := k.heard[src]
	k.seq++
	h := heardAt{at: k.now(), seq: k.seq}
	if lasts > 0 {
		h.until = h.at.Add(lasts)
	}
	k.heard[src] = h
	if !known && len(k.heard) > maxHeard {
		k.evictOldest()
	}
	_, resolved := k.neigh[src]
	if _, asked := k.resolving[src]; !resolved && !asked {
		k.resolving[src] = h.at
	}
	grew := !known && k.rebuild()
	k.mu.Unlock()
	k.after(grew)
	if !resolved && k.resolve != nil {
		k.resolve(src)
	}
}

// evictOldest forgets the least recently heard member; under mu.
func (k *Known) evictOldest() {
	var oldest netip.Addr
	for a, at := range k.heard {
		if !oldest.IsValid() || at.seq < k.heard[oldest].seq {
			oldest = a
		}
	}
	delete(k.heard, oldest)
	delete(k.resolving, oldest)
}

// SetLink records an interface of this host and its hardware address.
func (k *Known) SetLink(index int, mac net.HardwareAddr) {
	k.mu.Lock()
	if len(mac) > 0 && !allZero(mac) {
		k.own[index] = string(mac)
	} else {
		delete(k.own, index)
	}
	grew := k.rebuild()
	k.mu.Unlock()
	k.after(grew)
}

// DelLink records that an interface of this host is gone.
func (k *Known) DelLink(index int) {
	k.mu.Lock()
	delete(k.own, index)
	k.rebuild()
	k.mu.Unlock()
}

// Neigh records the kernel's neighbour entry of ip: its hardware address
// now. It ends a member's wait for it (Resolving) and says Grew.
func (k *Known) Neigh(ip netip.Addr, mac net.HardwareAddr) {
	if len(mac) == 0 || allZero(mac) {
		k.NeighGone(ip)
		return
	}
	ip = ip.Unmap().WithZone("")
	k.mu.Lock()
	if k.neigh[ip] == string(mac) {
		k.mu.Unlock()
		return
	}
	_, waited := k.resolving[ip] // a member's wait for it ends: the guard looks again
	delete(k.resolving, ip)
	k.neigh[ip], k.last[ip] = string(mac), string(mac)
	grew := k.isMember(ip) && k.rebuild()
	k.mu.Unlock()
	k.after(grew || waited)
}

// NeighGone records that the kernel has no usable entry for ip any more
// (deleted, flushed, failed to resolve). Its latest hardware address stays
// ours — the member still has it unless told otherwise — but the member is
// resolved again at its next advertisement (Heard): a member whose
// interface was made again while we had no entry for it answers from a
// MAC we must learn (testdata/guard/member-remade.txt).
func (k *Known) NeighGone(ip netip.Addr) {
	ip = ip.Unmap().WithZone("")
	k.mu.Lock()
	delete(k.neigh, ip)
	delete(k.resolving, ip) // asked again at its next advertisement, with a grace of its own
	k.mu.Unlock()
}

// NeighIncomplete records that the kernel is resolving ip (an entry
// without a hardware address yet): its entry goes (its latest hardware
// address stays ours, as with NeighGone), and a member's wait for its
// resolution (Resolving) goes on.
func (k *Known) NeighIncomplete(ip netip.Addr) {
	ip = ip.Unmap().WithZone("")
	k.mu.Lock()
	delete(k.neigh, ip)
	k.mu.Unlock()
}

// Resolving implements Identity: until when a claim from a hardware
// address not known may still be a member's: the latest of ResolveGrace
// after a member was first heard without an entry, over the members still
// unresolved; zero: none.
func (k *Known) Resolving() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	var until time.Time
	now := k.now()
	for _, at := range k.resolving {
		if end := at.Add(ResolveGrace); end.After(now) && end.After(until) {
			until = end
		}
	}
	return until
}

// rebuild derives ours from the own interfaces and the members' entries
// and says whether an address was added; under mu.
func (k *Known) rebuild() bool {
	ours := make(map[string]bool, len(k.own)+len(k.peers)+len(k.heard))
	for _, mac := range k.own {
		ours[mac] = true
	}
	for m := range k.members() {
		if mac, ok := k.last[m]; ok {
			ours[mac] = true
		}
	}
	grew := false
	for mac := range ours {
		grew = grew || !k.ours[mac]
	}
	k.ours = ours
	return grew
}

// after says Grew when grew.
func (k *Known) after(grew bool) {
	if !grew {
		return
	}
	select {
	case k.grew <- struct{}{}:
	default: // one pending says it
	}
}
