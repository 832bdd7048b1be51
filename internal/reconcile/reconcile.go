package reconcile

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/novaedge/cpvip/internal/bind"
)

// Addresses is the kernel state a Reconciler corrects: the addresses of one
// interface. Add must be idempotent (replace) and sets the address's
// lifetime (0: permanent; else the kernel removes the address once that
// long has passed since the latest Add of it); Del of an absent address is no error.
type Addresses interface {
	List() ([]netip.Prefix, error)
	Add(p netip.Prefix, lifetime time.Duration) error
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
	// Lapsed: held, gone from the interface because its lifetime ran out
	// before this process renewed it (it did not run: frozen, starved).
	// Not bound again by this step: the election's word from before the
	// lapse is stale (Lifetime).
	Lapsed Action = "lapsed"
)

// Change is one action on one VIP.
type Change struct {
	VIP    netip.Prefix
	Action Action
	Err    error // set when Action is Failed
	// Renewal: a failed renewal of a VIP's lifetime; the VIP is bound as
	// before (not touched by the step: a re-announcement asked for goes).
	Renewal bool
}

// Counts are the totals of each action since start.
type Counts map[Action]uint64

// Checker is the address conflict check (internal/acd's Guard). Tell says
// whether this node is elected to hold vip and whether the kernel has it
// bound here, and has the check judge it; Verdict reads that judgement.
type Checker interface {
	Tell(vip netip.Addr, want, bound bool)
	Verdict(vip netip.Addr) bind.Check
}

// Reconciler corrects the owned VIPs on an interface. It touches no other address.
type Reconciler struct {
	addrs Addresses
	owned []netip.Prefix
	held  map[netip.Addr]bool // installed by us and not released since
	// kept: found bound at start (a dead run's) and kept, its lifetime
	// renewed, until the election's verdict on it (Resume).
	kept   map[netip.Addr]bool
	listed bool    // the last Step read the interface's addresses
	check  Checker // nil: no conflict check
	life   Lifetime
	now    func() time.Time
	// renewed: when each held VIP's lifetime was last set (zero: not by
	// this process, as for a VIP found bound at start).
	renewed map[netip.Addr]time.Time
	stepped time.Time // the latest Step's time

	mu     sync.Mutex // guards counts, read by status while Step runs
	counts Counts
}

// Lifetime is how long the kernel keeps a VIP this process bound without
// hearing from it again: the dead man's switch of a holder whose process
// died or stopped running. Zero Valid: permanent.
type Lifetime struct {
	// Valid is the address's valid and preferred lifetime, in whole
	// seconds (the kernel's unit).
	Valid time.Duration
	// Renew is how often a held VIP's lifetime is set again.
	Renew time.Duration
}

// kernelEarly is how much before its lifetime ends the kernel may remove
// an address (ADDRCONF_TIMER_FUZZ_MINUS: HZ/50 jiffies).
const kernelEarly = 20 * time.Millisecond

// New returns a Reconciler for the given VIPs on addrs.
func New(addrs Addresses, owned []netip.Prefix) *Reconciler {
	return &Reconciler{addrs: addrs, owned: owned, held: map[netip.Addr]bool{}, kept: map[netip.Addr]bool{}, counts: Counts{},
		renewed: map[netip.Addr]time.Time{}, now: time.Now}
}

// SetLifetime makes every VIP this process binds expire unless renewed,
// with now as the clock (before the first Step).
func (r *Reconciler) SetLifetime(l Lifetime, now func() time.Time) { r.life, r.now = l, now }

// RenewAt returns when the next renewal of a held VIP is due, and a step
// that could not renew one that was due tries again a quarter of a renewal
// period later; zero: none is due.
func (r *Reconciler) RenewAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var next time.Time
	if r.life.Valid == 0 {
		return next
	}
	for _, vip := range r.owned {
		if at := r.renewed[vip.Addr()].Add(r.life.Renew); r.renewing(vip.Addr()) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	if retry := r.stepped.Add(r.life.Renew / 4); !next.IsZero() && next.Before(retry) {
		next = retry
	}
	return next
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
	r.stepped = r.now()
	actual, err := r.addrs.List()
	if r.listed = err == nil; !r.listed {
		return r.count([]Change{{Action: Failed, Err: fmt.Errorf("listing addresses: %w", err)}})
	}
	var changes []Change
	now := r.stepped
	for _, vip := range r.owned {
		present := matching(actual, vip.Addr())
		exact := len(present) == 1 && present[0] == vip
		hold, decided := bind.Decide(r.inputs(vip, elected, len(present) > 0))
		if decided {
			delete(r.kept, vip.Addr())
		}
		switch {
		case !decided:
		case hold && exact:
			r.held[vip.Addr()] = true
			if c, due := r.renew(vip, now); due {
				changes = append(changes, c)
			}
		case len(present) == 0 && r.lapsed(vip, now):
			// Our lifetime ran out: this process did not run for longer
			// than the backups wait, one of them may hold the VIP now, and
			// the election has not yet read what it queued meanwhile.
			r.held[vip.Addr()] = false
			changes = append(changes, Change{VIP: vip, Action: Lapsed})
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
		r.check.Tell(vip.Addr(), want, bound)
		in.Check = r.check.Verdict(vip.Addr())
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
	now := r.now()
	if err := r.addrs.Add(vip, r.life.Valid); err != nil {
		return Change{VIP: vip, Action: Failed, Err: fmt.Errorf("adding %s: %w", vip, err)}
	}
	r.held[vip.Addr()], r.renewed[vip.Addr()] = true, now
	return Change{VIP: vip, Action: action}
}

// Renew sets again the lifetime of every held VIP whose renewal is due,
// without reading the interface, and returns the failures; wanted is the
// election's latest word (the VIPs it holds). It does nothing and says
// false when a Step must look instead: a held VIP's lifetime may have run
// out by our clock (this process did not run), or the election let go of a
// VIP still held (its removal failed: the interface was gone) — renewing
// it would bind it again, on an interface made again meanwhile.
func (r *Reconciler) Renew(wanted map[netip.Addr]bool) ([]Change, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	for _, vip := range r.owned {
		if r.held[vip.Addr()] && !wanted[vip.Addr()] {
			return nil, false // let go of: only a Step removes it
		}
		if last, ok := r.renewed[vip.Addr()]; r.renewing(vip.Addr()) && ok && now.Sub(last) >= r.life.Valid-r.life.Renew {
			return nil, false // a renewal this late: look at the interface first
		}
	}
	r.stepped = now
	var changes []Change
	for _, vip := range r.owned {
		if !r.renewing(vip.Addr()) {
			continue
		}
		if c, failed := r.renew(vip, now); failed {
			changes = append(changes, c)
		}
	}
	return r.count(changes), true
}

// renewing says whether vip's lifetime is this process's to renew: held,
// or kept while the election decides.
func (r *Reconciler) renewing(vip netip.Addr) bool { return r.held[vip] || r.kept[vip] }

// renew sets the lifetime of vip, held and bound, again when it is due: a
// VIP found bound at start at once. It returns a change only if that failed.
func (r *Reconciler) renew(vip netip.Prefix, now time.Time) (Change, bool) {
	last, ok := r.renewed[vip.Addr()]
	if r.life.Valid == 0 || ok && now.Sub(last) < r.life.Renew {
		return Change{}, false
	}
	if err := r.addrs.Add(vip, r.life.Valid); err != nil {
		return Change{VIP: vip, Action: Failed, Err: fmt.Errorf("renewing %s: %w", vip, err), Renewal: true}, true
	}
	r.renewed[vip.Addr()] = now
	return Change{}, false
}

// lapsed says whether vip, held by this process and gone from the
// interface, went because its lifetime ran out.
func (r *Reconciler) lapsed(vip netip.Prefix, now time.Time) bool {
	return r.held[vip.Addr()] && r.expired(vip.Addr(), now)
}

// expired says whether the lifetime this process last set on vip has run
// out by our clock (false without a lifetime, or one set by another run).
func (r *Reconciler) expired(vip netip.Addr, now time.Time) bool {
	last, ok := r.renewed[vip]
	return r.life.Valid > 0 && ok && now.Sub(last) >= r.life.Valid-kernelEarly
}

func (r *Reconciler) remove(vip netip.Prefix, present []netip.Prefix) Change {
	for _, p := range present {
		if err := r.addrs.Del(p); err != nil {
			return Change{VIP: vip, Action: Failed, Err: fmt.Errorf("removing %s: %w", p, err)}
		}
	}
	r.held[vip.Addr()] = false
	delete(r.renewed, vip.Addr())
	return Change{VIP: vip, Action: Removed}
}

func (r *Reconciler) count(changes []Change) []Change {
	for _, c := range changes {
		r.counts[c.Action]++
	}
	return changes
}

// Resume reports whether the owned VIPs are on the interface as configured
// now (at start: left there by an earlier run whose process died) — every
// one, or with missingOne all but one (the conflict check kept it down:
// another host answers for it), and none with another prefix — and, if so,
// keeps those found: the election keeps them until its verdict, so their
// lifetime is renewed from now on (at once: what is left of the dead run's
// may run out while the election listens) until a Step decides them. They
// are not held (installed by this run) until then.
func (r *Reconciler) Resume(missingOne bool) (bool, error) {
	actual, err := r.addrs.List()
	if err != nil {
		return false, err
	}
	var found []netip.Prefix
	for _, vip := range r.owned {
		switch present := matching(actual, vip.Addr()); {
		case len(present) == 0:
		case len(present) != 1 || present[0] != vip:
			return false, nil
		default:
			found = append(found, vip)
		}
	}
	if len(found) == 0 || len(found) < len(r.owned) && !(missingOne && len(found) == len(r.owned)-1) {
		return false, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, vip := range found {
		r.kept[vip.Addr()] = true
	}
	return true, nil
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
		touched[c.VIP] = c.Action == Installed || c.Action == Fixed || c.Action == Failed && !c.Renewal
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

// Fresh reports whether vip is held and, bound with a lifetime, renewed
// within it by our clock: after this process did not run for longer, the
// kernel may have removed it before any step saw that (an announcement of
// it would pull the neighbours to an address nobody answers for).
func (r *Reconciler) Fresh(vip netip.Addr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[vip] && !r.expired(vip, r.now())
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
