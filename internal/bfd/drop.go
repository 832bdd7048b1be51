package bfd

import "sync/atomic"

// Reason is why a received packet was dropped. It is an error.
type Reason string

// Error implements error.
func (r Reason) Error() string { return "bfd: dropped: " + string(r) }

// The drop reasons, in the order of RFC 5880 section 6.8.6 where it has one.
const (
	DropShort      Reason = "short"
	DropVersion    Reason = "version"
	DropLength     Reason = "length"
	DropDetectMult Reason = "detect_mult"
	DropMultipoint Reason = "multipoint"
	DropMyDisc     Reason = "my_discriminator"
	DropYourDisc   Reason = "your_discriminator" // no session with it
	DropNoSession  Reason = "no_session"         // your discriminator 0 and no session for the source
	DropState      Reason = "state"              // your discriminator 0 while the packet's state is not Down/AdminDown
	DropAuth       Reason = "auth"               // malformed auth section, or auth where none is configured or none where it is
	DropAuthFailed Reason = "auth_failed"        // wrong key or sequence number
	DropTTL        Reason = "ttl"                // TTL / hop limit not 255 (RFC 5881 section 5)
)

// reasons is every drop reason, indexed for Drops; never modified.
var reasons = [...]Reason{DropShort, DropVersion, DropLength, DropDetectMult, DropMultipoint, DropMyDisc,
	DropYourDisc, DropNoSession, DropState, DropAuth, DropAuthFailed, DropTTL}

// Reasons lists every drop reason, for metrics.
func Reasons() []Reason { return append([]Reason(nil), reasons[:]...) }

// Drops counts drops by reason without locks or allocation.
type Drops struct {
	counts [len(reasons)]atomic.Uint64
}

// Add counts one drop.
func (d *Drops) Add(r Reason) {
	for i := range reasons {
		if reasons[i] == r {
			d.counts[i].Add(1)
			return
		}
	}
}

// Snapshot returns the counts by reason.
func (d *Drops) Snapshot() map[Reason]uint64 {
	out := make(map[Reason]uint64, len(reasons))
	for i, r := range reasons {
		out[r] = d.counts[i].Load()
	}
	return out
}
