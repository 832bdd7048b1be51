package sim

import (
	"net"
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/vrrp"
)

// kind is what a frame on the virtual segment carries.
type kind int

const (
	advert    kind = iota // a VRRP advertisement from ip
	probe                 // an ARP probe / neighbour solicitation for vip (RFC 5227: sender 0.0.0.0)
	claim                 // an answer for vip, or an announcement of it (gratuitous ARP / unsolicited NA)
	self                  // a gratuitous ARP for the sender's own address ip
	resolve               // an ARP request for ip's hardware address, answered by its owner
	malformed             // a frame carrying vip where a parser looks, that does not parse
)

var kindNames = [...]string{"advert", "probe", "claim", "self", "resolve", "malformed"}

func (k kind) String() string { return kindNames[k] }

// frame is one frame on the segment.
type frame struct {
	kind kind
	from *host
	mac  net.HardwareAddr
	ip   netip.Addr // the sender's address (advert, self) or the one asked for (resolve)
	vip  netip.Addr // probe, claim, malformed
	adv  vrrp.Advertisement
	to   *host // nil: every host
}

// segment is the L2 segment: who is on it, and how it delivers.
type segment struct {
	w     *world
	hosts []*host
	// side partitions the segment: frames pass only between hosts of one
	// side (all 0: whole).
	side map[*host]int
	// loss, dup: probabilities per delivery; delay: the most a frame takes
	// (at least minDelay).
	loss, dup float64
	delay     time.Duration
	// faultAt is the latest time the segment lost a frame or was
	// partitioned: invariants about what a whole segment guarantees count
	// from it.
	faultAt time.Time
	// last is when the latest frame from one host to another arrives:
	// frames on one path keep their order.
	last map[[2]*host]time.Time
}

const minDelay = 100 * time.Microsecond

// send delivers f to every host it reaches, each after its own delay.
func (s *segment) send(f frame) {
	if !f.from.linked() {
		return
	}
	if d := f.from.d; d != nil && f.kind == claim {
		// A packet socket sees the host's own outgoing frames.
		s.w.after(0, "own frame", func() {
			if f.from.d == d {
				d.receive(f)
			}
		})
	}
	for _, h := range s.hosts {
		if h == f.from || (f.to != nil && h != f.to) {
			continue
		}
		if s.side[h] != s.side[f.from] || s.w.chance(s.loss) {
			s.faultAt = s.w.now
			continue
		}
		copies := 1
		if s.w.chance(s.dup) {
			copies = 2
		}
		for range copies {
			h := h
			at := s.w.now.Add(s.w.between(minDelay, max(minDelay, s.delay)))
			if s.last == nil {
				s.last = map[[2]*host]time.Time{}
			}
			path := [2]*host{f.from, h}
			if prev := s.last[path]; at.Before(prev) {
				at = prev
			}
			s.last[path] = at
			s.w.at(at, "deliver "+f.kind.String(), func() {
				if !h.linked() {
					return // lost on a link without carrier
				}
				h.receive(f)
			})
		}
	}
}
