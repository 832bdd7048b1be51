package acd

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
)

// Neighbours is the Identity of a node: the hardware addresses of its own
// interfaces (Linux answers ARP for a local address on any of them) and of
// the members of its VRRP group, as the kernel's neighbour table has them.
// A member the table lacks is resolved by the kernel (NTF_USE).
type Neighbours struct {
	ifname  string
	members func() []netip.Addr

	mu        sync.Mutex
	ours      map[string]bool      // hardware addresses, as of the latest refresh
	strangers map[string]time.Time // addresses judged not ours, and when
}

// NewNeighbours returns the identity of this node on ifname; members lists
// the addresses of the other routers of its group.
func NewNeighbours(ifname string, members func() []netip.Addr) *Neighbours {
	return &Neighbours{ifname: ifname, members: members, ours: map[string]bool{}, strangers: map[string]time.Time{}}
}

// judgeWait is how long an address that is neither ours nor a member's yet
// is looked up again before it counts as a stranger: a member's
// advertisement and its neighbour entry can come a moment after its
// gratuitous ARP (two of our nodes that became master at once).
const judgeWait = 200 * time.Millisecond

// strangerMemory is how long an address judged a stranger is judged at once;
// maxStrangers bounds how many are remembered.
const (
	strangerMemory = 10 * time.Second
	maxStrangers   = 64
)

// Ours implements Identity.
func (n *Neighbours) Ours(mac net.HardwareAddr) bool {
	n.mu.Lock()
	ok, since := n.ours[string(mac)], n.strangers[string(mac)]
	n.mu.Unlock()
	if ok {
		return true
	}
	deadline := time.Now().Add(judgeWait)
	if time.Since(since) < strangerMemory {
		deadline = time.Now() // judged lately: one look only
	} else {
		n.forget() // a member's MAC may have changed (its interface made again)
	}
	for {
		n.Refresh()
		n.mu.Lock()
		ok = n.ours[string(mac)]
		n.mu.Unlock()
		if ok || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !ok {
		n.mu.Lock()
		if len(n.strangers) >= maxStrangers {
			clear(n.strangers)
		}
		n.strangers[string(mac)] = time.Now()
		n.mu.Unlock()
	}
	return ok
}

// forget deletes the members' neighbour entries, so that the next Refresh
// has the kernel resolve them afresh: an entry keeps an old MAC until the
// kernel probes it again.
func (n *Neighbours) forget() {
	link, err := netlink.LinkByName(n.ifname)
	if err != nil {
		return
	}
	for _, m := range n.members() {
		_ = netlink.NeighDel(&netlink.Neigh{LinkIndex: link.Attrs().Index, Family: family(m), IP: m.WithZone("").AsSlice()})
	}
}

func family(a netip.Addr) int {
	if a.Is6() {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}

// Refresh implements Identity.
func (n *Neighbours) Refresh() {
	ours := map[string]bool{}
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if len(i.HardwareAddr) > 0 {
				ours[string(i.HardwareAddr)] = true
			}
		}
	}
	if link, err := netlink.LinkByName(n.ifname); err == nil {
		n.addMembers(link.Attrs().Index, ours)
	}
	n.mu.Lock()
	n.ours = ours
	n.mu.Unlock()
}

// addMembers adds the members' hardware addresses from the neighbour table
// and asks the kernel to resolve the members it lacks.
func (n *Neighbours) addMembers(index int, ours map[string]bool) {
	known := map[netip.Addr]net.HardwareAddr{}
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		neighs, err := netlink.NeighList(index, family)
		if err != nil {
			continue
		}
		for _, e := range neighs {
			ip, ok := netip.AddrFromSlice(e.IP)
			if ok && len(e.HardwareAddr) > 0 && !allZero(e.HardwareAddr) {
				known[ip.Unmap()] = e.HardwareAddr
			}
		}
	}
	for _, m := range n.members() {
		if mac, ok := known[m.WithZone("")]; ok {
			ours[string(mac)] = true
			continue
		}
		// NTF_USE: the kernel starts resolving the address, as if it had
		// a packet for it; the answer lands in the table for the next refresh.
		_ = netlink.NeighSet(&netlink.Neigh{LinkIndex: index, Family: family(m), IP: m.WithZone("").AsSlice(),
			Flags: netlink.NTF_USE})
	}
}
