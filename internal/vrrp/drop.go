package vrrp

import "sync"

// Reason is why a received packet was dropped. It is an error.
type Reason string

// Error implements error.
func (r Reason) Error() string { return "vrrp: dropped: " + string(r) }

// The drop reasons, counted per instance.
const (
	DropShort    Reason = "short"      // shorter than the fixed header
	DropVersion  Reason = "version"    // not version 3
	DropType     Reason = "type"       // not an advertisement
	DropLength   Reason = "length"     // address count 0 or larger than the packet
	DropChecksum Reason = "checksum"   // neither with nor (IPv4) without pseudo-header
	DropInterval Reason = "interval"   // max advertise interval 0
	DropTTL      Reason = "ttl"        // TTL / hop limit not 255: not from the link
	DropVRID     Reason = "other_vrid" // another virtual router on the link
	DropOwn      Reason = "own"        // our own advertisement
	DropNotPeer  Reason = "not_peer"   // unicast mode: source is not a configured peer
	// DropForeign: our VRID, another address list: another group on the
	// segment that picked the same VRID, not part of our election.
	DropForeign Reason = "other_group"
)

// Reasons lists every drop reason, for metrics.
func Reasons() []Reason {
	return []Reason{DropShort, DropVersion, DropType, DropLength, DropChecksum, DropInterval,
		DropTTL, DropVRID, DropOwn, DropNotPeer, DropForeign}
}

// Drops counts dropped packets by reason; safe for concurrent use.
type Drops struct {
	mu     sync.Mutex
	counts map[Reason]uint64
}

// Add counts one drop.
func (d *Drops) Add(r Reason) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.counts == nil {
		d.counts = map[Reason]uint64{}
	}
	d.counts[r]++
}

// Snapshot returns the counts by reason, zero counts included.
func (d *Drops) Snapshot() map[Reason]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[Reason]uint64, len(Reasons()))
	for _, r := range Reasons() {
		out[r] = d.counts[r]
	}
	return out
}
