package sim

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/l2node"
	"github.com/novaedge/cpvip/internal/reconcile/reconciletest"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// The VIPs of every run (documentation ranges).
var (
	vip4 = netip.MustParsePrefix("192.0.2.100/32")
	vip6 = netip.MustParsePrefix("2001:db8::100/128")
)

// sim is one run: the world, the segment, the group and its invariants.
type sim struct {
	w        *world
	seg      *segment
	sh       shape
	group    []*host // our nodes, then the keepalived-like member: a fault's Node
	stranger *host
	vips     []netip.Prefix
	bounds   bounds
	inv      state
	// faultEnd is when the latest fault applied ends.
	faultEnd time.Time
	// hit is the host each fault applied hit (Node -1 resolved), and
	// whether it held the VIP then.
	hit map[fault]hit
}

// hit is the host a fault hit and whether it held the VIP then.
type hit struct {
	h    *host
	held bool
}

// Result is the outcome of one run.
type Result struct {
	Seed    uint64
	Failure *Failure
	Events  int
	Virtual time.Duration
	// Expected counts the promises of faults alone in their window that
	// were checked (expect).
	Expected int
	shape    shape
	trace    *world
}

// Failure is an invariant that did not hold.
type Failure struct {
	Invariant string
	At        time.Duration
	Detail    string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("%s at %.3fs: %s", f.Invariant, f.At.Seconds(), f.Detail)
}

// Run runs the schedule the seed draws; faults, when not nil, replace the
// drawn faults (shrinking).
func Run(seed uint64, faults []fault) Result {
	sh := draw(newWorld(seed))
	if faults != nil {
		sh.Faults = faults
	}
	s := newSim(seed, sh)
	for i, h := range s.group {
		s.w.at(epoch.Add(time.Duration(i)*7*time.Millisecond), h.name+" start", func() { h.start() })
	}
	for _, f := range sh.Faults {
		s.w.at(epoch.Add(f.At), "fault "+f.What.String(), func() { s.apply(f) })
	}
	end := epoch.Add(sh.Length + s.bounds.quiet + 5*time.Second)
	err := s.w.runUntil(end, s.check)
	r := Result{Seed: seed, Events: s.w.events, Virtual: s.w.now.Sub(epoch), Expected: s.inv.expected, shape: sh, trace: s.w}
	if err != nil {
		r.Failure = err.(*Failure)
	}
	return r
}

func newSim(seed uint64, sh shape) *sim {
	w := newWorld(seed + 1)
	s := &sim{w: w, sh: sh, vips: []netip.Prefix{vip4}, hit: map[fault]hit{}}
	if sh.DualStack {
		s.vips = append(s.vips, vip6)
	}
	s.seg = &segment{w: w, side: map[*host]int{}, delay: sh.Delay}
	n := sh.Nodes
	if sh.Keepalived {
		n++
	}
	for i := range n {
		h := s.newHost(fmt.Sprintf("n%d", i), i)
		if i >= sh.Nodes {
			h.role, h.name = keepalived, fmt.Sprintf("k%d", i)
		}
		s.group = append(s.group, h)
	}
	for i, h := range s.group { // once every host exists: the peers
		h.env = s.envFile(h, sh.Priorities[i])
		cfg, err := config.LoadMap(h.env)
		if err != nil {
			panic(fmt.Sprintf("the simulation's own configuration is invalid: %v", err))
		}
		h.cfg = cfg
	}
	for _, h := range s.group { // what the nodes' neighbour tables hold at start
		for _, o := range s.group {
			if o != h && w.chance(0.5) {
				h.neigh[o.ip] = o.mac
			}
		}
	}
	s.stranger = s.newHost("stranger", 99)
	s.stranger.role = stranger
	s.bounds = newBounds(sh)
	s.faultEnd = epoch // start-up is the first fault
	s.inv = newState()
	return s
}

func (s *sim) newHost(name string, i int) *host {
	h := &host{s: s, name: name, ip: netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i)}),
		ip6: netip.MustParseAddr("2001:db8::" + strconv.Itoa(10+i)), mac: net.HardwareAddr{2, 0, 0, 1, 0, byte(i + 1)},
		index: 1, iface: true, carrier: true, neigh: map[netip.Addr]net.HardwareAddr{}}
	h.addrs = reconciletest.New(netip.PrefixFrom(h.ip, 24))
	s.seg.hosts = append(s.seg.hosts, h)
	return h
}

// envFile is a node's env file at start.
func (s *sim) envFile(h *host, priority int) map[string]string {
	sh := s.sh
	addrs := make([]string, len(s.vips))
	for i, v := range s.vips {
		addrs[i] = v.String()
	}
	failOpen := sh.FailOpen && h.role == ours
	if priority == 1 && failOpen {
		priority = 2
	}
	vars := map[string]string{
		"NOVAEDGE_CP_VIP_ADDRESS":              strings.Join(addrs, ","),
		"NOVAEDGE_CP_VIP_PRIORITY":             strconv.Itoa(priority),
		"NOVAEDGE_CP_VIP_ADVERT_INTERVAL":      sh.Interval.String(),
		"NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL": strconv.Itoa(map[bool]int{true: sh.Sends, false: 1}[h.role == ours]),
		"NOVAEDGE_CP_VIP_PREEMPT":              strconv.FormatBool(sh.Preempt),
		"NOVAEDGE_CP_VIP_RESTART_WAIT":         sh.RestartWait.String(),
		"NOVAEDGE_CP_VIP_FAIL_OPEN":            strconv.FormatBool(failOpen),
		"NOVAEDGE_CP_VIP_CONFLICT_CHECK":       strconv.FormatBool(sh.Check && h.role == ours),
	}
	if sh.Unicast {
		var peers []string
		for _, o := range s.group {
			if o != h {
				peers = append(peers, o.ip.String())
				if sh.DualStack {
					peers = append(peers, o.ip6.String())
				}
			}
		}
		vars["NOVAEDGE_CP_VIP_PEERS"] = strings.Join(peers, ",")
	}
	return vars
}

// target is the host a fault hits.
func (s *sim) target(node int) *host {
	if node >= 0 {
		return s.group[node%len(s.group)]
	}
	for _, h := range s.group {
		if h.holds(vip4.Addr()) {
			return h
		}
	}
	return s.group[0]
}

// apply carries out a fault.
func (s *sim) apply(f fault) {
	w := s.w
	t := s.target(f.Node)
	s.hit[f] = hit{t, t.holds(vip4.Addr())}
	w.logf("%s   FAULT %s", t.name, f)
	s.expect(f, t)
	if end := w.now.Add(f.Dur); end.After(s.faultEnd) {
		s.faultEnd = end
	}
	later := func(what string, do func()) { w.after(f.Dur, t.name+" "+what, do) }
	switch f.What {
	case fAPI:
		if t.role != ours {
			return
		}
		a := api(f.Arg)
		t.setAPI(a, f.Dur)
		if a == apiDraining {
			w.after(f.Dur/2, t.name+" apiserver port closed", func() { t.setAPI(apiRefused, 0) })
		}
		later("apiserver healthy", func() { t.setAPI(apiHealthy, 0) })
	case fAllAPIs:
		order := append([]*host{t}, slices.DeleteFunc(slices.Clone(s.group), func(h *host) bool { return h == t })...)
		for i, h := range order {
			if h.role == ours {
				w.after(time.Duration(i*f.Arg)*time.Millisecond, h.name+" apiserver killed", h.killAPI)
				w.after(f.Dur, h.name+" apiserver healthy", func() { h.setAPI(apiHealthy, 0) })
			}
		}
	case fKill, fStop:
		if t.d == nil {
			return
		}
		if f.What == fStop {
			if t.d.frozen() { // systemd sends SIGCONT after the SIGTERM
				t.d.thaw()
			}
			t.d.stop()
		}
		t.d, t.goneAt = nil, w.now
		later("start", func() {
			if t.d == nil {
				t.start()
			}
		})
	case fFlap:
		t.setLink(true, false)
		later("carrier back", func() { t.setLink(true, true) })
	case fRecreate:
		t.setLink(false, false)
		later("interface made again", func() { t.setLink(true, true) })
	case fPartition:
		s.seg.side[t], s.seg.faultAt = 1, w.now
		later("partition healed", func() { s.seg.side[t], s.seg.faultAt = 0, w.now })
	case fLoss:
		s.seg.loss = float64(f.Arg) / 100
		later("loss over", func() { s.seg.loss, s.seg.faultAt = 0, w.now })
	case fStranger:
		s.strangerHolds(true, f.Arg == 1)
		later("stranger gone", func() { s.strangerHolds(false, false) })
	case fMalformed:
		s.malformed(w.now.Add(f.Dur))
	case fWire:
		if f.Arg == 1 { // a stranger announces the VIP, then leaves as the wire fails
			// Twice (a host's announcements come in bursts, RFC 5227's
			// ANNOUNCE_NUM): one alone a holder defends (acd.Guard), and
			// the claim this fault is about never forms.
			s.strangerHolds(true, true)
			w.after(time.Millisecond, "stranger announces again", func() {
				for _, v := range s.vips {
					s.seg.send(frame{kind: claim, from: s.stranger, mac: s.stranger.mac, vip: v.Addr()})
				}
			})
			w.after(50*time.Millisecond, "stranger gone", func() { s.strangerHolds(false, false) })
		}
		w.after(time.Duration(f.Arg)*5*time.Millisecond, t.name+" wire fails", func() {
			if t.d != nil {
				t.d.breakWires(f.Dur)
			}
		})
	case fReload: // a SIGHUP: a frozen daemon reloads when it runs again
		if t.d != nil {
			t.d.when(false, func() { s.reload(t, f.Arg) })
		}
	case fNeighFlush:
		t.flush()
	case fNetlink:
		t.netlinkDown = w.now.Add(f.Dur)
		later("netlink subscribed again", t.dump)
	case fFreeze:
		if t.d != nil {
			t.d.freeze(f.Dur)
		}
	}
}

// stop is a SIGTERM: the node resigns and releases every VIP.
func (d *daemon) stop() { d.handle(vrrp.Event{Kind: vrrp.ShutDown}) }

// strangerHolds makes the stranger bind the VIPs, or remove them.
func (s *sim) strangerHolds(on, announce bool) {
	h := s.stranger
	for _, v := range s.vips {
		if on {
			h.addrs.Add(v, 0)
			if announce {
				s.seg.send(frame{kind: claim, from: h, mac: h.mac, vip: v.Addr()})
			}
		} else {
			h.addrs.Del(v)
		}
	}
	if on {
		s.inv.strangerSince = s.w.now
	} else {
		s.inv.strangerSince = time.Time{}
	}
}

// malformed sends a malformed frame carrying the VIP every 50 ms until end.
func (s *sim) malformed(end time.Time) {
	if !s.w.now.Before(end) {
		return
	}
	s.seg.send(frame{kind: malformed, from: s.stranger, mac: s.stranger.mac, vip: vip4.Addr()})
	s.w.after(50*time.Millisecond, "malformed frame", func() { s.malformed(end) })
}

// reload edits a node's env file and reloads it (cmd/novaedge-cpvip's
// reloadOn: config.Reload, then the live values to their owners).
func (s *sim) reload(h *host, variant int) {
	if h.role != ours || h.d == nil {
		return
	}
	d := h.d
	change := map[string]string{}
	switch variant {
	case 0:
		change["NOVAEDGE_CP_VIP_PRIORITY"] = strconv.Itoa(2 + s.w.rng.IntN(250))
	case 1:
		change["NOVAEDGE_CP_VIP_PREEMPT"] = strconv.FormatBool(!d.cfg.Preempt)
	case 2:
		change["NOVAEDGE_CP_VIP_PRIORITY"], change["NOVAEDGE_CP_VIP_FAIL_OPEN"] = "1", "false"
	case 3:
		change["NOVAEDGE_CP_VIP_PRIORITY"] = "not a number"
	}
	env := maps.Clone(h.env)
	maps.Copy(env, change)
	next, err := config.LoadMap(env)
	if err != nil {
		s.w.logf("%s   reload refused: the file is invalid: %v", h.name, err)
		return
	}
	h.env, h.cfg = env, next // a restart starts with the file
	merged, applied, restart, err := config.Reload(d.cfg, next)
	if err != nil {
		s.w.logf("%s   reload refused: %v", h.name, err)
		return
	}
	s.w.logf("%s   reloaded applied=%v restart=%v", h.name, applied, restart)
	prev := d.cfg
	d.cfg = merged
	l2node.Reload(tuner{d}, prev, merged)
}

// holders are the hosts of the group whose kernel answers for vip; with
// running, only those whose daemon runs and is not frozen.
func (s *sim) holders(vip netip.Addr, running bool) []*host {
	var out []*host
	for _, h := range s.group {
		if h.holds(vip) && (!running || h.d != nil && !h.d.frozen()) {
			out = append(out, h)
		}
	}
	return out
}

// String describes the run's group.
func (sh shape) String() string {
	return fmt.Sprintf("%d nodes%s, advert %v (%d a interval), fail open %v, preempt %v, dual stack %v, unicast %v, conflict check %v, restart wait %v, priorities %v, delay ≤ %v",
		sh.Nodes, map[bool]string{true: " + a keepalived-like member"}[sh.Keepalived], sh.Interval, sh.Sends, sh.FailOpen,
		sh.Preempt, sh.DualStack, sh.Unicast, sh.Check, sh.RestartWait, sh.Priorities, sh.Delay)
}

// ensure vrrp is used for the failover constants in invariants.go.
var _ = vrrp.FailOpenPriority
