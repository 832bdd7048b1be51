// Package bind decides whether this node binds a VIP now: one pure
// function of the election's verdict, the conflict check's verdict and what
// the kernel has bound. It is the only place that decision is made; the
// reconcile step asks it for every VIP it owns (internal/reconcile), and the
// simulation drives it as the daemon does (internal/testing/sim).
package bind

// Election is the elector's verdict on a VIP.
type Election int

// The election's verdicts.
const (
	// Undecided: no verdict yet. At start a VIP found bound (an earlier
	// run of ours was killed) waits for the first health verdict; what the
	// kernel has stays as it is.
	Undecided Election = iota
	// Elected: this node should hold the VIP (VRRP master, a resigned
	// master handing over, BGP healthy or fail open).
	Elected
	// NotElected: this node must not hold the VIP.
	NotElected
)

// Check is the address conflict check's verdict on a VIP (RFC 5227).
type Check int

// The conflict check's verdicts.
const (
	// Clear: no other host answers for the VIP and a probe went unanswered
	// lately, or the VIP is not checked (no check configured, or its wire
	// has failed for long: a fault in the check never keeps the VIP down).
	Clear Check = iota
	// Unprobed: no other host is known to answer, but no probe has gone
	// unanswered yet (the check is settling after start), or answers wait
	// for a member's resolution and the VIP is not bound.
	Unprobed
	// Claimed: another host answers for the VIP.
	Claimed
	// Defended: another host answered for the VIP this node holds once,
	// and this node defended it (RFC 5227 section 2.4 (b): it announced
	// the VIP again); a second answer within DEFEND_INTERVAL makes it
	// Claimed. A VIP not bound is not bound meanwhile.
	Defended
)

// Inputs are what the decision reads for one VIP.
type Inputs struct {
	Election Election
	Check    Check
	// Bound: the kernel has the VIP on our interface now (ours: only this
	// daemon binds it there).
	Bound bool
}

// Decide says whether the VIP should be bound (hold), or that nothing is
// decided yet and what the kernel has stays (decided false).
//
//   - Undecided: leave it. A VIP kept across a restart of the daemon stays
//     bound until the election speaks.
//   - NotElected: release.
//   - Elected and another host answers for it: release (never two hosts
//     answering for one address), whether or not it is bound.
//   - Elected and bound: keep it. A VIP bound already needs no probe: the
//     holder keeps probing, and a host that answers makes it Defended,
//     then, answering again, Claimed.
//   - Elected, not bound: bind once a probe went unanswered (Clear); while
//     the check has not probed, or answers wait for a member's resolution
//     (Unprobed), wait.
func Decide(in Inputs) (hold, decided bool) {
	switch {
	case in.Election == Undecided:
		return in.Bound, false
	case in.Election == NotElected:
		return false, true
	case in.Check == Claimed:
		return false, true
	case in.Bound:
		return true, true
	default:
		return in.Check == Clear, true
	}
}

// String returns the verdict's name.
func (e Election) String() string {
	switch e {
	case Elected:
		return "elected"
	case NotElected:
		return "not elected"
	default:
		return "undecided"
	}
}

// String returns the verdict's name.
func (c Check) String() string {
	switch c {
	case Unprobed:
		return "unprobed"
	case Claimed:
		return "claimed"
	case Defended:
		return "defended"
	default:
		return "clear"
	}
}
