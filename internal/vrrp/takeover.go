package vrrp

import (
	"fmt"
	"net/netip"
	"time"
)

// Cause is why a backup takes the VIP from its master.
type Cause int

// The causes. A takeover from a live master (FailOpenMaster, FailOpenLong,
// WeakerMaster) is brought forward to the handover skew, as one from a
// master that Resigned; the others wait out the Master_Down_Timer.
const (
	NoTakeover     Cause = iota // not a takeover: a resume, a rejoin, carrier back
	MasterDown                  // no advertisement within the master down interval
	Resigned                    // the master advertised priority 0
	FailOpenMaster              // the master advertises the fail-open priority; we are healthy and settled
	FailOpenLong                // the master has advertised the fail-open priority for SettleWithin while we were healthy
	WeakerMaster                // Preempt, and the master advertises a lower priority
	SilentServing               // silent for ServedWait, though its host still answers for the VIP
	SilentGone                  // silent, and its host stopped answering for the VIP
)

// Live says whether the master taken over was alive: it advertised until
// the takeover.
func (c Cause) Live() bool { return c == FailOpenMaster || c == FailOpenLong || c == WeakerMaster }

// NeedsSettled says whether a takeover for this cause needs this node's
// health settled (Params.Unsettled): one from a live master, but past
// SettleWithin.
func (c Cause) NeedsSettled() bool { return c == FailOpenMaster || c == WeakerMaster }

// Takeover is a backup's reason to become master: its cause, the master it
// replaces and what that master last said.
type Takeover struct {
	Cause    Cause
	From     netip.Addr    // the master replaced (Resigned, FailOpenMaster, FailOpenLong, WeakerMaster)
	Priority uint8         // its advertised priority (WeakerMaster)
	For      time.Duration // how long it was silent (SilentServing, SilentGone), or failing (FailOpenLong)
}

// String is the reason logged with the state change.
func (t Takeover) String() string {
	switch t.Cause {
	case Resigned:
		return fmt.Sprintf("the master %s resigned (priority 0)", t.From)
	case FailOpenMaster:
		return fmt.Sprintf("the master %s advertises the fail-open priority 1 (its apiserver fails its checks) and this node is healthy and settled", t.From)
	case FailOpenLong:
		return fmt.Sprintf("the master %s has advertised the fail-open priority 1 (its apiserver fails its checks) for %v while this node was healthy, not yet settled", t.From, t.For)
	case WeakerMaster:
		return fmt.Sprintf("preempting the weaker master %s (priority %d)", t.From, t.Priority)
	case SilentServing:
		return fmt.Sprintf("no advertisement for %v, though the master's host still answers for the VIP", t.For)
	case SilentGone:
		return fmt.Sprintf("no advertisement for %v, and the master's host stopped answering for the VIP", t.For)
	default:
		return "no advertisement within the master down interval"
	}
}

// waitPhase is where a backup stands in replacing its master.
type waitPhase int

const (
	// counting: the Master_Down_Timer runs its full length from the
	// master's latest sign of life; with ServedWait the backup asks at
	// ask.at whether the master's host still answers.
	counting waitPhase = iota
	// asking: asked at ask.at, no answer yet.
	asking
	// held: an answer put the timer off (the master's host serves, its
	// daemon is silent); the backup asks again at ask.at (zero: it has
	// put it off as long as ServedWait allows).
	held
	// reasking: held, and asked again at ask.at, no answer yet.
	reasking
	// soon: the timer is brought forward to the handover skew, for
	// wait.soon (the master resigned, or a live master is taken over).
	soon
)

// backupWait is a backup's takeover state: its phase and the data that
// phase carries.
type backupWait struct {
	phase waitPhase
	since time.Time // the master's latest sign of life (or when we became a backup)
	ask   time.Time // counting, held: when to ask (zero: not); asking, reasking: when asked
	soon  Takeover  // soon: why
	// resigned: a master that resigned while we were in doubt of our
	// apiserver (Params.InDoubt); a doubt that ends healthy takes it over
	// within our handover skew; one that ends unhealthy forgets it.
	// Following a master's advertisement (waitFor) or taking over clears
	// it.
	resigned netip.Addr
	// resignedAt: when the backup first heard the master resign since it
	// last followed an advertisement (zero: it has not).
	resignedAt time.Time
}

// askDue returns when the backup asks next; zero: it does not.
func (w backupWait) askDue() time.Time {
	if w.phase == counting || w.phase == held {
		return w.ask
	}
	return time.Time{}
}

// answered says whether an answer has put the timer off in this silence.
func (w backupWait) answered() bool { return w.phase == held || w.phase == reasking }

// askedAt returns when the backup asked and no answer came yet; zero: no
// question is open.
func (w backupWait) askedAt() time.Time {
	if w.phase == asking || w.phase == reasking {
		return w.ask
	}
	return time.Time{}
}
