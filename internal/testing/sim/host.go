package sim

import (
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/l2"
	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/novaedge/cpvip/internal/reconcile/reconciletest"
)

// role is what runs on a host.
type role int

const (
	ours       role = iota // novaedge-cpvip
	keepalived             // a keepalived-like member: fixed priority, no conflict check, no resume
	stranger               // a host outside the group that may answer for the VIP
)

// api is the state of a host's apiserver.
type api int

const (
	apiHealthy  api = iota
	apiSlow         // answers in slowBy
	apiHung         // its etcd stopped: answers /livez/ping, never a check
	apiRefused      // nothing listens
	apiDraining     // graceful shutdown begun: /readyz says so
)

var apiNames = [...]string{"healthy", "slow", "hung", "refused", "draining"}

func (a api) String() string { return apiNames[a] }

// netlinkDelay is how long a kernel change takes to reach the daemon as a
// netlink event.
const netlinkDelay = 2 * time.Millisecond

// host is one machine on the segment: its kernel (interface, carrier,
// addresses, neighbour table), its apiserver, and the daemon when one runs.
type host struct {
	s       *sim
	name    string
	role    role
	ip, ip6 netip.Addr
	mac     net.HardwareAddr
	index   int  // the interface's index: a new one when it is made again
	iface   bool // the interface exists
	carrier bool
	// linkedSince: when the interface last came to exist with carrier.
	linkedSince time.Time
	addrs       *reconciletest.Addrs
	// lapse: when the kernel removes each address bound with a lifetime.
	lapse map[netip.Prefix]time.Time
	// goneAt: when the latest daemon was killed or stopped (zero: one runs).
	goneAt time.Time
	neigh  map[netip.Addr]net.HardwareAddr
	api    api
	slowBy time.Duration
	// resetsAt: a SIGKILLed apiserver's listening socket accepts until
	// then, while the kernel tears the process down, and resets what it
	// accepted then (killTeardown).
	resetsAt time.Time
	// closeSeen: the apiserver, not healthy, closed the kept connection
	// and the checker saw it.
	closeSeen bool
	env       map[string]string // the env file
	cfg       *config.Config    // what the daemon starts with: the env file's
	// netlinkDown: until when the identity's netlink subscription fails
	// (acd.WatchKernel): the kernel's table changes do not reach it.
	netlinkDown time.Time
	d           *daemon // nil: no daemon runs
}

func (h *host) linked() bool { return h.iface && h.carrier }

// holds says whether the kernel answers for vip now.
func (h *host) holds(vip netip.Addr) bool { return h.linked() && h.bound(vip) }

// bound says whether vip is in h's address table, carrier or not.
func (h *host) bound(vip netip.Addr) bool {
	return h.addrs.Has(vip)
}

// expire sets p's lifetime (0: permanent): unless set again, the kernel
// removes p that long later, and up to l2.KernelLate after (a spread drawn
// from the time, not the world's randomness: the schedules stay as drawn),
// and the daemon hears of it by netlink.
func (h *host) expire(p netip.Prefix, lifetime time.Duration) {
	if lifetime == 0 {
		delete(h.lapse, p)
		return
	}
	w := h.s.w
	at := w.now.Add(lifetime + time.Duration(w.now.UnixNano()%int64(l2.KernelLate)))
	if h.lapse == nil {
		h.lapse = map[netip.Prefix]time.Time{}
	}
	h.lapse[p] = at
	addrs := h.addrs
	w.at(at, h.name+" lifetime of "+p.String()+" ran out", func() {
		if h.addrs != addrs || !h.lapse[p].Equal(at) {
			return
		}
		delete(h.lapse, p)
		h.addrs.Del(p)
		if d := h.d; d != nil {
			h.s.w.after(netlinkDelay, "netlink addr gone", func() {
				if h.d == d {
					d.when(false, func() { d.kernelNews(reconcile.AddrChanged) })
				}
			})
		}
	})
}

// receive is the kernel's part of a frame, then the daemon's.
func (h *host) receive(f frame) {
	switch f.kind {
	case probe:
		if h.holds(f.vip) {
			h.s.seg.send(frame{kind: claim, from: h, mac: h.mac, vip: f.vip, to: f.from})
		}
	case resolve:
		if f.ip == h.ip || f.ip == h.ip6 {
			h.learn(f.from.addrOf(f.ip), f.mac) // Linux learns the asker
			h.s.seg.send(frame{kind: self, from: h, mac: h.mac, ip: f.ip, to: f.from})
		}
	case self:
		if _, ok := h.neigh[f.ip]; ok || f.to == h { // an existing entry follows a gratuitous ARP
			h.learn(f.ip, f.mac)
		}
	}
	if h.d != nil {
		h.d.receive(f)
	}
}

// addrOf is h's address of ip's family.
func (h *host) addrOf(ip netip.Addr) netip.Addr {
	if ip.Is4() {
		return h.ip
	}
	return h.ip6
}

// learn updates the neighbour entry of ip; the daemon hears of it by netlink.
func (h *host) learn(ip netip.Addr, mac net.HardwareAddr) {
	if old, ok := h.neigh[ip]; ok && slices.Equal(old, mac) {
		return
	}
	h.neigh[ip] = slices.Clone(mac)
	if d := h.d; d != nil && !h.s.w.now.Before(h.netlinkDown) {
		h.s.w.after(netlinkDelay, "netlink neigh", func() {
			if h.d == d && d.known != nil {
				d.when(false, func() { d.known.Neigh(ip, mac) })
			}
		})
	}
}

// flush empties the neighbour table (ip neigh flush; the interface
// deleted); the daemon hears of each entry gone by netlink.
func (h *host) flush() {
	d := h.d
	for ip := range sortedNeigh(h.neigh) {
		delete(h.neigh, ip)
		if d != nil && !h.s.w.now.Before(h.netlinkDown) {
			h.s.w.after(netlinkDelay, "netlink neigh gone", func() {
				if h.d == d && d.known != nil {
					d.when(false, func() { d.known.NeighGone(ip) })
				}
			})
		}
	}
}

// dump is WatchKernel subscribing again: the links and the neighbour
// table as they are now.
func (h *host) dump() {
	if d := h.d; d != nil && d.known != nil {
		if h.iface {
			d.known.SetLink(h.index, h.mac)
		}
		for ip, mac := range sortedNeigh(h.neigh) {
			d.known.Neigh(ip, mac)
		}
		d.news()
	}
}

// answer is the apiserver's answer to one health check with timeout and
// hungAfter (health.Config), and how long it took.
func (h *host) answer(timeout, hungAfter time.Duration) (health.Result, time.Duration) {
	switch h.api {
	case apiSlow:
		if h.slowBy < timeout {
			return health.Result{Outcome: health.Passed, Status: 200}, h.slowBy
		}
		return health.Result{Reason: "timeout"}, timeout
	case apiHung:
		if hungAfter > 0 && hungAfter < timeout {
			return health.Result{Outcome: health.Hung, Reason: "hung"}, hungAfter + time.Millisecond
		}
		return health.Result{Reason: "timeout"}, timeout
	case apiRefused:
		return health.Result{Outcome: health.Refused, Reason: "connection refused"}, max(time.Millisecond, h.resetsAt.Sub(h.s.w.now))
	case apiDraining:
		return health.Result{Outcome: health.Drained, Status: 500, Reason: "shutting down"}, 3 * time.Millisecond
	}
	return health.Result{Outcome: health.Passed, Status: 200}, 3 * time.Millisecond
}

// setAPI changes the apiserver's state; a process that ends closes the
// kept connection, and the checker checks at once.
func (h *host) setAPI(a api, slowBy time.Duration) {
	h.api, h.slowBy = a, slowBy
	if a == apiHealthy {
		h.resetsAt, h.closeSeen = time.Time{}, false
	}
	if d := h.d; d != nil && (a == apiRefused || a == apiDraining) {
		h.s.w.after(time.Millisecond, "connection closed", func() {
			if h.d == d {
				d.when(false, d.checkNow)
			}
		})
	}
}

// killTeardown is how long a SIGKILLed apiserver's port still accepts
// before it resets: up to 40 ms on the real control plane lab, loaded.
const killTeardown = 40 * time.Millisecond

// killAPI SIGKILLs the apiserver: refused, after its teardown.
func (h *host) killAPI() {
	h.resetsAt = h.s.w.now.Add(killTeardown)
	h.setAPI(apiRefused, 0)
}

// setLink changes the interface: exists, carrier; a new interface gets a
// new index and MAC, and has none of the old one's addresses.
func (h *host) setLink(exists, carrier bool) {
	if exists && !h.iface {
		h.index++
		h.mac = net.HardwareAddr{2, 0, 0, byte(h.index), 0, h.mac[5]}
		h.addrs, h.lapse = reconciletest.New(netip.PrefixFrom(h.ip, 24)), nil
	}
	if !exists {
		h.addrs, h.lapse = reconciletest.New(), nil
		h.flush()
	}
	if exists && carrier && !h.linked() {
		h.linkedSince = h.s.w.now
	}
	h.iface, h.carrier = exists, exists && carrier
	if d := h.d; d != nil {
		h.s.w.after(netlinkDelay, "netlink link", func() {
			if h.d == d {
				d.when(false, d.linkChanged)
			}
		})
	}
}
