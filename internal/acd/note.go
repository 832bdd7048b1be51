package acd

import (
	"net/netip"
	"time"
)

// Note is something the guard tells the rest of the node. The guard calls
// nothing: its driver takes the notes (Notes) when Noted says there are
// some, and hands each to its owner.
type Note struct {
	Kind   NoteKind
	VIP    netip.Addr // Contested, Defend
	Member bool       // Served: the host is a known router of our group
	At     time.Time  // Served: when the answer was seen
}

// NoteKind says what a Note tells.
type NoteKind int

// The notes.
const (
	// Changed: a verdict may have changed; the reconcile loop judges it
	// again (Tell) and reads it (Verdict).
	Changed NoteKind = iota
	// Contested: another router of our group announced VIP, which this
	// node should hold (at most once a ProbeEvery per VIP): the neighbours
	// that heard it now send to that router. The holder announces the VIP
	// again (l2node.Node); a lost advertisement must not leave
	// them there after that router stepped back. Its answers to our probes
	// reach only us: nothing to win back.
	Contested
	// Defend: this node defends VIP, which it holds, against another
	// host's first answer (RFC 5227 section 2.4 (b)): it announces the VIP
	// again (l2node.Node).
	Defend
	// Served: a host other than this node answered for a VIP or announced
	// it: its kernel runs and holds the VIP. A backup whose master went
	// silent waits for it while it is a known router of our group (its
	// daemon restarting; vrrp.Node.Served, asked through ProbeNow).
	Served
)

// String names the kind.
func (k NoteKind) String() string {
	return [...]string{"changed", "contested", "defend", "served"}[k]
}

// note queues n for the driver and wakes it. Safe under mu or not.
func (g *Guard) note(n Note) {
	g.nmu.Lock()
	g.notes = append(g.notes, n)
	g.nmu.Unlock()
	select {
	case g.noted <- struct{}{}:
	default:
	}
}

// Notes takes what the guard noted since the last call, in order.
func (g *Guard) Notes() []Note {
	g.nmu.Lock()
	defer g.nmu.Unlock()
	out := g.notes
	g.notes = nil
	return out
}

// Noted has a value when notes wait to be taken.
func (g *Guard) Noted() <-chan struct{} { return g.noted }
