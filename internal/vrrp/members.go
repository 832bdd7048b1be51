package vrrp

import (
	"net/netip"
	"sync"
	"time"
)

// maxMembers bounds the members remembered (a group has a handful).
const maxMembers = 16

// memberMemory is how long a source stays a member after its last
// advertisement: address conflict detection must still know a master that
// resigned (it answers for the VIP during the handover) long after it last
// advertised.
const memberMemory = 10 * time.Minute

// members remembers the sources of our own group's advertisements: the
// routers of this election. Safe for concurrent use.
type members struct {
	mu   sync.Mutex
	seen map[netip.Addr]time.Time
}

// add records an advertisement of our group from src at now.
func (m *members) add(src netip.Addr, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[netip.Addr]time.Time{}
	}
	if _, ok := m.seen[src]; !ok && len(m.seen) >= maxMembers {
		m.expire(now)
		if len(m.seen) >= maxMembers {
			return
		}
	}
	m.seen[src] = now
}

// list returns the members heard within memberMemory of now.
func (m *members) list(now time.Time) []netip.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire(now)
	out := make([]netip.Addr, 0, len(m.seen))
	for a := range m.seen {
		out = append(out, a)
	}
	return out
}

func (m *members) expire(now time.Time) {
	for a, t := range m.seen {
		if now.Sub(t) > memberMemory {
			delete(m.seen, a)
		}
	}
}
