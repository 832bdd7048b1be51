package vrrp

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/health"
)

// EventKind names what happened to a node's election.
type EventKind uint8

const (
	// TimerFired: the core's timer (Core.Deadline) is due.
	TimerFired EventKind = iota + 1
	// Received: an advertisement of our group the readers accepted (Adv,
	// Src).
	Received
	// HealthChanged: the checker's transition (Health).
	HealthChanged
	// PriorityReloaded: a reload's PRIORITY (Priority).
	PriorityReloaded
	// PreemptReloaded: a reload's PREEMPT (Preempt).
	PreemptReloaded
	// SettleReloaded: a reload's HEALTH_INTERVAL, as SettleWithin (Settle).
	SettleReloaded
	// Answered: a host answered for a VIP at At, answering the latest
	// question (Instance.answers); Member: a router of our group.
	Answered
	// LifetimeLapsed: a held VIP's lifetime ran out.
	LifetimeLapsed
	// LinkNews: look at the interface (netlink's news, or the periodic
	// refresh).
	LinkNews
	// ShutDown: the daemon stops; a master resigns.
	ShutDown
	// PrimariesFound: the transports' source addresses (Primaries, in
	// their order), found once the interface has them; the carrier is
	// followed from then on.
	PrimariesFound
	// QueueRead: the election reads what the kernel queued and acts on
	// it now (an announcement out of its time asks first: after a freeze,
	// another node may have taken over meanwhile).
	QueueRead
	// Beside: an event of the node around the election (Beside), from
	// Run's feed; the election alone has none.
	Beside
	// Started: the driver's loop runs (before the primaries are found):
	// nothing for the election, whose events wait for its primaries.
	Started
)

var eventNames = [...]string{TimerFired: "timer fired", Received: "received", HealthChanged: "health changed",
	PriorityReloaded: "priority reloaded", PreemptReloaded: "preempt reloaded", SettleReloaded: "settle reloaded",
	Answered: "answered", LifetimeLapsed: "lifetime lapsed", LinkNews: "link news", ShutDown: "shut down",
	PrimariesFound: "primaries found", QueueRead: "queue read", Beside: "beside", Started: "started"}

// String names the kind.
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// Event is one thing that happens to a node's election: what
// Instance.Run's loop receives, and what the simulation hands it.
type Event struct {
	Kind     EventKind
	Adv      Advertisement     // Received
	Src      netip.Addr        // Received
	Health   health.Transition // HealthChanged
	Priority uint8             // PriorityReloaded
	Preempt  bool              // PreemptReloaded
	Settle   time.Duration     // SettleReloaded
	Member   bool              // Answered
	At       time.Time         // Answered
	// Primaries: PrimariesFound.
	Primaries []netip.Addr
	// Beside: what happened to the node around the election (its own
	// type), for its Driven.
	Beside any
}

// Driven is what Instance.Run drives: the election alone (Node) or the
// node around it (internal/l2node). Handle takes one event with the clock
// and the reader of the kernel's queue, and returns when it must be
// woken next (TimerFired; zero: only by an event).
type Driven interface {
	Handle(e Event, now func() time.Time, read Reader) time.Time
}

// Handle is Step as Driven: it returns the core's deadline.
func (n *Node) Handle(e Event, now func() time.Time, read Reader) time.Time {
	n.Step(e, now, read)
	return n.core.Deadline()
}

// Step hands the election one event, the clock read with now, carries out
// what it decided (Apply) and returns that. An event that must not reach
// the core before the advertisements the kernel queued (a due timer; a
// health verdict or a reload that finds the timer overdue: catchUp) has
// them read first (read). A doubt of our apiserver (Transition.InDoubt)
// goes in before them, the rest of its transition after: the doubt only
// holds takeovers back, and what was queued after the apiserver closed the
// connection (a process that did not run meanwhile) must not be acted on
// as if it were healthy. An unknown kind is a bug: it panics.
func (n *Node) Step(e Event, now func() time.Time, read Reader) []Effect {
	core := n.core
	switch e.Kind {
	case TimerFired:
		n.due(read)
	case Received:
		core.Receive(e.Adv, e.Src, now())
	case HealthChanged:
		if e.Health.InDoubt {
			core.setInDoubt(true, now())
		}
		n.catchUp(now(), read)
		core.Health(e.Health, now())
	case PriorityReloaded:
		n.catchUp(now(), read)
		core.SetBase(e.Priority, now())
	case PreemptReloaded:
		n.catchUp(now(), read)
		core.SetPreempt(e.Preempt)
	case SettleReloaded:
		core.SetSettleWithin(e.Settle)
	case Answered:
		core.Served(e.Member, e.At)
	case LifetimeLapsed:
		n.lapsed(read)
	case LinkNews:
		n.link(now())
	case ShutDown:
		core.Shutdown(now())
	case PrimariesFound:
		n.primaries(e.Primaries, now())
	case QueueRead:
		read()
	case Started:
	default:
		panic(fmt.Sprintf("vrrp: unknown event kind %v", e.Kind))
	}
	return n.Apply(now())
}
