package reconcile

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/novaedge/cpvip/internal/bind"
)

// Addresses is the kernel state a Reconciler corrects: the addresses of one
// interface. Add must be idempotent (replace); Del of an absent address is no error.
type Addresses interface {
	List() ([]netip.Prefix, error)
	Add(netip.Prefix) error
	Del(netip.Prefix) error
}

// Action is what a step did to one VIP.
type Action string

// The actions a step counts.
const (
	Installed Action = "installed" // added because we now hold it
	Fixed     Action = "fixed"     // re-added or corrected after someone else changed it
	Removed   Action = "removed"   // removed because we do not hold it (also: left by an earlier run)
	Failed    Action = "failed"    // a kernel call failed; the next pass retries
	Lost      Action = "lost"      // held, now gone from the interface and not to be bound again now (nothing to remove)
)

// Change is one action on one VIP.
type Change struct {
	VIP    netip.Prefix
	Action Action
	Err    error // set when Action is Failed
}

// Counts are the totals of each action since start.
type Counts map[Action]uint64

// Checker is the address conflict check (internal/acd's Guard): its
// verdict on vip, told whether this node is elected to hold it and whether
// the kernel has it bound here.
type Checker interface {
	Verdict(vip netip.Addr, want, bound bool) bind.Check
}

// Reconciler corrects the owned VIPs on an interface. It touches no other address.
type Reconciler struct {
	addrs  Addresses
	owned  []netip.Prefix
	held   map[netip.Addr]bool // installed by us and not released since
	listed bool                // the last Step read the interface's addresses
	check  Checker             // nil: no conflict check

	mu     sync.Mutex // guards counts, read by status while Step runs
	counts Counts
}

// New returns a Reconciler for the given VIPs on addrs.
func New(addrs Addresses, owned []netip.Prefix) *Reconciler {
	return &Reconciler{addrs: addrs, owned: owned, held: map[netip.Addr]bool{}, counts: Counts{}}
}

// SetCheck makes the conflict check c one input of every bind decision
// (before the first Step).
func (r *Reconciler) SetCheck(c Checker) { r.check = c }

// Step makes the owned VIPs match the bind decision and returns what it
// changed; a converged state issues no mutation. elected is the election's
// verdict per VIP; a VIP absent from it is undecided (say, health not known
// yet after start) and left as it is. Whether each VIP is bound is decided
// by bind.Decide from that verdict, the conflict check's and what the
// kernel has bound now.
func (r *Reconciler) Step(elected map[netip.Prefix]bool) []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	actual, err := r.addrs.List()
	if r.listed = err == nil; !r.listed {
		return r.count([]Change{{Action: Failed, Err: fmt.Errorf("listing addresses: %w", err)}})
	}
	var changes []Change
	for _, vip := range r.owned {
		present := matching(actual, vip.Addr())
		exact := len(present) == 1 && present[0] == vip
		hold, decided := bind.Decide(r.inputs(vip, elected, len(present) > 0))
		switch {
		case !decided:
		case hold && exact:
			r.held[vip.Addr()] = true
		case hold:
			changes = append(changes, r.install(vip, present))
		case len(present) > 0:
			changes = append(changes, r.remove(vip, present))
		case r.held[vip.Addr()]:
			// Held, gone from the interface (deleted by hand, flushed)
			// and not to be bound again now: nothing to remove, but
			// what announces it must stop.
			r.held[vip.Addr()] = false
			changes = append(changes, Change{VIP: vip, Action: Lost})
		}
	}
	return r.count(changes)
}

// inputs gathers what the bind decision of vip reads.
func (r *Reconciler) inputs(vip netip.Prefix, elected map[netip.Prefix]bool, bound bool) bind.Inputs {
	in := bind.Inputs{Election: bind.Undecided, Check: bind.Clear, Bound: bound}
	want, ok := elected[vip]
	switch {
	case !ok:
		return in
	case want:
		in.Election = bind.Elected
	default:
		in.Election = bind.NotElected
	}
	if r.check != nil {
		in.Check = r.check.Verdict(vip.Addr(), want, bound)
	}
	return in
}

// install adds vip, first removing the same address with another prefix length.
func (r *Reconciler) install(vip netip.Prefix, wrong []netip.Prefix) Change {
	action := Installed
	if r.held[vip.Addr()] || len(wrong) > 0 {
		action = Fixed
	}
	for _, p := range wrong {
		if err := r.addrs.Del(p); err != nil {
			return Change{VIP: vip, Action: Failed, Err: fmt.Errorf("removing %s before re-adding: %w", p, err)}
		}
	}
	if err := r.addrs.Add(vip); err != nil {
		return Change{VIP: vip, Action: Failed, Err: fmt.Errorf("adding %s: %w", vip, err)}
	}
	r.held[vip.Addr()] = true
	return Change{VIP: vip, Action: action}
}

func (r *Reconciler) remove(vip netip.Prefix, present []netip.Prefix) Change {
	for _, p := range present {
		if err := r.addrs.Del(p); err != nil {
			return Change{VIP: vip, Action: Failed, Err: fmt.Errorf("removing %s: %w", p, err)}
		}
	}
	r.held[vip.Addr()] = false
	return Change{VIP: vip, Action: Removed}
}

func (r *Reconciler) count(changes []Change) []Change {
	for _, c := range changes {
		r.counts[c.Action]++
	}
	return changes
}

// AllBound reports whether every owned VIP is on the interface exactly as
// configured now (at start: left there by an earlier run).
func (r *Reconciler) AllBound() (bool, error) {
	actual, err := r.addrs.List()
	if err != nil {
		return false, err
	}
	for _, vip := range r.owned {
		if present := matching(actual, vip.Addr()); len(present) != 1 || present[0] != vip {
			return false, nil
		}
	}
	return len(r.owned) > 0, nil
}

// ToAnnounce returns the VIPs a pass announces again: those this node has
// bound that the pass did not just bind (announcing what it binds is the
// Changed hook's), all of them after link up, else those asked for (again).
// A VIP elected but kept down — the conflict check has not cleared it, or
// another host answers for it — is never announced.
// A pass that could not read the interface announces nothing (what it
// holds is not known): ok is false, and the caller asks again next pass.
func (r *Reconciler) ToAnnounce(desired, again map[netip.Prefix]bool, changes []Change, linkUp bool) (vips []netip.Prefix, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.listed {
		return nil, false
	}
	touched := map[netip.Prefix]bool{}
	for _, c := range changes {
		touched[c.VIP] = c.Action == Installed || c.Action == Fixed || c.Action == Failed
	}
	var out []netip.Prefix
	for _, vip := range r.owned {
		if desired[vip] && !touched[vip] && r.held[vip.Addr()] && (linkUp || again[vip]) {
			out = append(out, vip)
		}
	}
	return out, true
}

// Held reports whether this node holds vip (installed and present at the
// last step that read the interface).
func (r *Reconciler) Held(vip netip.Prefix) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[vip.Addr()]
}

// Counts returns a copy of the totals.
func (r *Reconciler) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(Counts, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}

func matching(actual []netip.Prefix, ip netip.Addr) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range actual {
		if p.Addr() == ip {
			out = append(out, p)
		}
	}
	return out
}
