package vrrp

import (
	"errors"
	"net/netip"
	"time"
)

// Node is an instance's election as one goroutine drives it: the Core,
// and the carrying out of what it decides over the instance's transports.
// Instance.Run drives it with the wall clock, the readers' advertisements
// and the interface's news; the simulation (internal/testing/sim) drives
// the same Node with its virtual clock and segment.
type Node struct {
	i      *Instance
	core   *Core
	decide func(netip.Prefix, bool)
}

// Node returns the instance's election, started at now: decide is called
// for every VIP on becoming master (true) and on leaving it (false). Its
// events go through Step, which carries out what they decided; after a
// call of its Core's own the driver calls Apply (once after Node too).
func (i *Instance) Node(decide func(netip.Prefix, bool), now time.Time) *Node {
	n := &Node{i: i, core: NewCore(i.cfg, i.log), decide: decide}
	n.core.Start(now)
	return n
}

// Core is the node's election, for what its driver reads of it (State,
// Deadline, …) and the settings a driver without health gives it.
func (n *Node) Core() *Core { return n.core }

// primaries takes the source address of each transport (their order) once
// found, and follows the interface's carrier from then on (PrimariesFound).
func (n *Node) primaries(ps []netip.Addr, now time.Time) {
	for k := range n.i.conns {
		n.i.primaries[k].Store(&ps[k])
	}
	n.core.SetPrimary(ps[0])
	n.i.setStatus(func(s *Status) { s.Primary = ps[0] })
	n.carrier(now)
}

// link looks at the interface now: deleted, made again, its carrier
// (refresh, carrier).
func (n *Node) link(now time.Time) {
	n.refresh(now)
	n.carrier(now)
}

// Reader hands the core every advertisement the kernel queued and not yet
// read, and returns the time after. When the process did not run for a
// while (SIGSTOP, a VM paused, a starved host) advertisements and timers
// are ready at once: a backup must see that its master is alive before
// its Master_Down_Timer fires, and a master that a backup replaced
// meanwhile must see that before it advertises (Machine.wasAbsent).
type Reader func() time.Time

// due runs the core's timer, after what the kernel queued (read).
func (n *Node) due(read Reader) { n.core.Timeout(read()) }

// catchUp runs a timer already due at now, after what the kernel queued,
// before another event (a health transition, a reload's priority or
// preempt): after a freeze a reload's priority must not reach a master
// before the advertisements of the node that took over.
func (n *Node) catchUp(now time.Time, read Reader) {
	if at := n.core.Deadline(); !at.IsZero() && !now.Before(at) {
		n.due(read)
	}
}

// lapsed says that a held VIP's lifetime ran out (LifetimeLapsed): after
// what the kernel queued, due timers run, then the election binds it
// again if still master (Core.Lapsed).
func (n *Node) lapsed(read Reader) {
	now := read()
	n.core.Timeout(now)
	n.core.Lapsed(now)
}

// Served hands the election an answer for a VIP seen at at (acd's Served
// note) if it answers the latest question (Instance.answers), and returns
// what it decided.
func (n *Node) Served(member bool, at time.Time, now func() time.Time) []Effect {
	if !n.i.answers(member, at) {
		return nil
	}
	return n.Step(Event{Kind: Answered, Member: member, At: at}, now, nil)
}

// Apply carries out, in order, what the core decided, and returns it.
func (n *Node) Apply(now time.Time) []Effect {
	i, effects := n.i, n.core.Ready()
	for _, e := range effects {
		switch e.Kind {
		case Advertise:
			i.send(e.Priority)
		case Ask:
			if i.cfg.Ask != nil {
				i.askedAt.Store(now.UnixNano())
				i.asking.Store(true)
				i.cfg.Ask()
			}
		case Decide:
			for _, vip := range i.cfg.VIPs {
				n.decide(vip, e.Hold)
			}
		case Report:
			i.setStatus(func(s *Status) { s.State, s.Changed, s.Reason = e.To, e.At, e.Reason })
		}
	}
	i.setStatus(func(s *Status) {
		s.Priority, s.Master, s.Failing = n.core.Priority(), n.core.Master(), n.core.Failing()
	})
	return effects
}

// refresh reopens a transport on a re-created interface and takes a
// possibly new primary address. A node whose interface is deleted leaves
// the election at once (Fault: the VIP went with the interface), and one
// whose interface was made again starts as a backup (Core.Gone): while it
// was gone another master may have taken over. Staying master would bind
// the VIP on the new interface, under a new MAC, before its first
// advertisement there: two holders, and to the other node's conflict check
// a stranger.
func (n *Node) refresh(now time.Time) {
	i := n.i
	for k, conn := range i.conns {
		changed, err := conn.Refresh()
		if errors.Is(err, ErrGone) && k == 0 {
			n.core.Gone(Deleted, now)
			continue
		}
		if err != nil {
			i.log.Debug("VRRP interface check failed", "error", err)
			continue
		}
		if !changed {
			continue
		}
		i.log.Info("VRRP interface created again, socket reopened")
		if k == 0 {
			n.core.Gone(MadeAgain, now)
		}
		if p, err := conn.Primary(); err == nil && p != *i.primaries[k].Load() {
			i.log.Info("VRRP source address changed", "from", *i.primaries[k].Load(), "to", p)
			if k == 0 {
				n.core.SetPrimary(p)
			}
			i.primaries[k].Store(&p)
		}
	}
}

// carrier follows the interface's carrier (Core.Carrier).
func (n *Node) carrier(now time.Time) {
	up, err := n.i.conns[0].Carrier()
	if err != nil {
		n.i.log.Debug("VRRP interface carrier check failed", "error", err)
		return
	}
	n.core.Carrier(up, now)
}
