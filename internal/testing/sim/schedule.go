package sim

import (
	"fmt"
	"time"
)

// what is a kind of fault.
type what int

const (
	fAPI        what = iota // the apiserver turns Arg (api) for Dur (draining: then refused), then healthy
	fKill                   // our daemon SIGKILLed (addresses kept), started again after Dur
	fStop                   // our daemon stopped (SIGTERM: resigns, releases), started again after Dur
	fFlap                   // carrier lost for Dur
	fRecreate               // the interface deleted, made again after Dur (a new MAC)
	fPartition              // the node cut off from the others for Dur
	fLoss                   // Arg % of frames lost for Dur
	fStranger               // a host outside the group answers for the VIP for Dur; Arg 1: it announces it
	fMalformed              // malformed frames carrying the VIP for Dur
	fWire                   // the node's conflict-check wires fail for Dur; Arg 1: right after a stranger announced the VIP for a moment
	fReload                 // a reload: Arg 0 a new priority, 1 preempt toggled, 2 priority 1 beside a running fail open, 3 a file that does not parse
	fNeighFlush             // the node's neighbour table flushed
	fNetlink                // the node's netlink subscription of the kernel's tables fails for Dur (events lost, then a dump)
	fFreeze                 // our daemon frozen for Dur (SIGSTOP, then SIGCONT: a VM paused, a starved host)
	numWhat
	// fAllAPIs is drawn apart, after everything else (draw): the schedules
	// drawn before it stay what they were.
	fAllAPIs // every node's apiserver SIGKILLed, the holder's first, the others Arg ms apart, for Dur; then healthy
)

var whatNames = [...]string{"apiserver", "kill", "stop", "carrier-flap", "recreate-interface", "partition", "loss",
	"stranger", "malformed-frames", "conflict-wire-fails", "reload", "neighbour-flush", "netlink-fails", "freeze"}

func (w what) String() string {
	if w == fAllAPIs {
		return "every-apiserver-killed"
	}
	return whatNames[w]
}

// fault is one event of a schedule.
type fault struct {
	At   time.Duration // from the start
	What what
	Node int // a node of the group; -1: whichever holds the VIP then (else the first)
	Dur  time.Duration
	Arg  int
}

func (f fault) String() string {
	node := "holder"
	if f.Node >= 0 {
		node = fmt.Sprintf("n%d", f.Node)
	}
	s := fmt.Sprintf("%7.3fs %-20s %-6s for %v", f.At.Seconds(), f.What, node, f.Dur)
	switch f.What {
	case fAPI:
		s += " " + api(f.Arg).String()
	case fLoss:
		s += fmt.Sprintf(" %d%%", f.Arg)
	case fStranger:
		s += map[int]string{0: " silent", 1: " announcing"}[f.Arg]
	case fReload:
		s += " " + reloadNames[f.Arg]
	case fWire:
		s += map[int]string{1: " after a stranger's claim"}[f.Arg]
	case fAllAPIs:
		s += fmt.Sprintf(" %dms apart", f.Arg)
	}
	return s
}

// end is when the fault is over.
func (f fault) end() time.Duration { return f.At + f.Dur }

var reloadNames = [...]string{"new priority", "preempt toggled", "priority 1 beside fail open", "unparsable file"}

// shape is a run's group and timing, drawn from its seed.
type shape struct {
	Nodes      int // our nodes
	Keepalived bool
	Interval   time.Duration
	Sends      int // advertisements per interval (ADVERTS_PER_INTERVAL) of our nodes
	FailOpen   bool
	Preempt    bool
	DualStack  bool
	Unicast    bool // unicast peers (NOVAEDGE_CP_VIP_PEERS) instead of multicast
	Check      bool // the conflict check
	Priorities []int
	// RestartWait: RESTART_WAIT, how long backups wait for a silent
	// master whose host answers for the VIP (0: they do not).
	RestartWait time.Duration
	Delay       time.Duration // the segment's most delay
	Faults      []fault
	Length      time.Duration // the faults' phase; a quiet tail follows
}

// draw makes a shape and a schedule from the world's randomness.
func draw(w *world) shape {
	sh := shape{Nodes: 2 + w.rng.IntN(3), Keepalived: w.chance(0.2), Interval: time.Second,
		FailOpen: w.chance(0.7), Preempt: w.chance(0.3), DualStack: w.chance(0.3), Unicast: w.chance(0.3), Check: w.chance(0.85),
		Delay:  []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}[w.rng.IntN(3)],
		Length: 30*time.Second + w.between(0, 60*time.Second)}
	if w.chance(0.3) {
		sh.Interval = 100 * time.Millisecond
	}
	n := sh.Nodes
	if sh.Keepalived {
		n++
	}
	for range n {
		p := 100
		if w.chance(0.5) {
			p = 2 + w.rng.IntN(250)
		}
		sh.Priorities = append(sh.Priorities, p)
	}
	// Dense schedules pile faults onto each other; sparse ones leave the
	// group settled between faults, where what a fault alone promises is
	// checked (expect).
	lo, hi := 300*time.Millisecond, 8*time.Second
	if w.chance(0.4) {
		lo, hi = 6*time.Second, 15*time.Second
		sh.Length += 60 * time.Second
	}
	for at := w.between(2*time.Second, 6*time.Second); at < sh.Length; at += w.between(lo, hi) {
		sh.Faults = append(sh.Faults, drawFault(w, sh, at, n))
	}
	// Drawn last: the schedules drawn before it stay what they were.
	sh.Sends = []int{1, 1, 2, 3}[w.rng.IntN(4)]
	sh.RestartWait = []time.Duration{4 * time.Second, 4 * time.Second, 0, 1500 * time.Millisecond}[w.rng.IntN(4)]
	if w.chance(0.25) {
		// A failure every node shares, seen at different moments: the
		// kills a handover skew or so apart.
		// Half of them alone, after the other faults have settled, where
		// what the failure promises is checked (expect).
		apart := w.between(0, 2*sh.Interval).Truncate(time.Millisecond)
		f := fault{At: w.between(2*time.Second, sh.Length), What: fAllAPIs, Node: -1,
			Dur: time.Duration(n)*apart + w.between(time.Second, 10*time.Second), Arg: int(apart / time.Millisecond)}
		if w.chance(0.5) {
			f.At = 2 * time.Second
			for _, g := range sh.Faults {
				f.At = max(f.At, g.end()+20*time.Second)
			}
			sh.Length = max(sh.Length, f.end())
		}
		sh.Faults = append(sh.Faults, f)
	}
	return sh
}

func drawFault(w *world, sh shape, at time.Duration, n int) fault {
	f := fault{At: at, What: what(w.rng.IntN(int(numWhat))), Node: -1}
	if w.chance(0.4) {
		f.Node = w.rng.IntN(n)
	}
	short := w.between(20*time.Millisecond, 2*sh.Interval)
	long := w.between(100*time.Millisecond, 6*time.Second)
	f.Dur = long
	if w.chance(0.5) {
		f.Dur = short
	}
	switch f.What {
	case fAPI:
		f.Arg = 1 + w.rng.IntN(4)
	case fLoss:
		f.Arg = []int{1, 5, 20, 50}[w.rng.IntN(4)]
	case fStranger:
		f.Arg = w.rng.IntN(2)
	case fReload:
		f.Arg = w.rng.IntN(len(reloadNames))
	case fKill:
		f.Dur = []time.Duration{200 * time.Millisecond, short, long}[w.rng.IntN(3)]
	case fWire:
		if w.chance(0.5) {
			f.Arg, f.Dur = 1, w.between(12*time.Second, 25*time.Second)
		}
	}
	return f
}
