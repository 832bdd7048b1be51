package spread

import (
	"net/netip"
	"sync"
)

// Health is what the checks say of a backend.
type Health int

// A backend is Unknown until its first verdict.
const (
	Unknown Health = iota
	Up
	Draining // its graceful shutdown began: no new connection while another serves
	Down
)

func (h Health) String() string {
	return [...]string{"unknown", "up", "draining", "down"}[h]
}

// Backend is one apiserver: Local is this node's own.
type Backend struct {
	Addr  netip.AddrPort
	Local bool
}

// BackendStatus is a backend as status and metrics show it.
type BackendStatus struct {
	Backend
	Health       Health
	DialFailed   bool   // its last dial failed; no new connection until a check passes
	Active       int    // connections open through it now
	Connections  uint64 // connections it took, in all
	Adopted      uint64 // of those, carried by a previous run of ours (Adopt)
	DialFailures uint64
}

// Pool holds the backends and picks one for each new connection. Safe for
// concurrent use.
type Pool struct {
	mu   sync.Mutex
	st   []BackendStatus
	next int // where the search for a tie starts: rotates
	// cuts: per backend, how to end each connection it carries (Carried).
	cuts   []map[uint64]func()
	cutSeq uint64
}

// NewPool returns a pool of bs, all Unknown.
func NewPool(bs []Backend) *Pool {
	p := &Pool{st: make([]BackendStatus, len(bs)), cuts: make([]map[uint64]func(), len(bs))}
	for i, b := range bs {
		p.st[i].Backend = b
	}
	return p
}

// index is the backend at addr (the local one at any loopback address:
// it is dialled as localhost).
func (p *Pool) index(addr netip.AddrPort) (int, bool) {
	for i, st := range p.st {
		if st.Addr == addr || st.Local && addr.Addr().IsLoopback() && addr.Port() == st.Addr.Port() {
			return i, true
		}
	}
	return 0, false
}

// Len is the number of backends.
func (p *Pool) Len() int { return len(p.st) }

// tiers order the backends for a new connection: healthy first; when none
// is (a failure every node shares, say an invalid token: the checks fail,
// the apiservers serve), any that has not refused a dial: not yet checked,
// then draining (it serves until its port closes), then unhealthy; last,
// those whose dial failed.
var tiers = [...]int{Up: 0, Unknown: 1, Draining: 2, Down: 3}

func tier(s BackendStatus) int {
	t := tiers[s.Health]
	if s.DialFailed {
		t += len(tiers)
	}
	return t
}

// Pick returns the backend for a new connection among those not tried:
// the best tier, then the fewest active connections, ties in turn. False
// when every backend was tried.
func (p *Pool) Pick(tried []bool) (int, Backend, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for k := range p.st {
		i := (p.next + k) % len(p.st)
		if tried[i] {
			continue
		}
		if best < 0 || less(p.st[i], p.st[best]) {
			best = i
		}
	}
	if best < 0 {
		return 0, Backend{}, false
	}
	p.next = best + 1
	return best, p.st[best].Backend, true
}

// UpLeft says whether a backend not tried yet is healthy and has not
// failed a dial: one worth moving a connection to.
func (p *Pool) UpLeft(tried []bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range p.st {
		if !tried[i] && s.Health == Up && !s.DialFailed {
			return true
		}
	}
	return false
}

func less(a, b BackendStatus) bool {
	if ta, tb := tier(a), tier(b); ta != tb {
		return ta < tb
	}
	return a.Active < b.Active
}

// Opened counts a connection to backend i; Closed ends it.
func (p *Pool) Opened(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st[i].Active++
	p.st[i].Connections++
	p.st[i].DialFailed = false
}

// Adopted counts a connection to backend i that a previous run carried
// (Opened, and Adopted); Closed ends it.
func (p *Pool) Adopted(i int) {
	p.Opened(i)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st[i].Adopted++
}

// Closed ends a connection Opened on backend i.
func (p *Pool) Closed(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st[i].Active--
}

// DialFailed says a dial to backend i failed (refused, reset, no answer):
// no new connection goes there, while another can take it, until one of
// its checks passes or a dial to it succeeds.
func (p *Pool) DialFailed(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st[i].DialFailed = true
	p.st[i].DialFailures++
}

// SetHealth records backend i's verdict; Up, a check has just passed.
// Down ends every connection backend i carries while another backend is
// up: its clients reconnect at once, to a backend that answers, instead of
// waiting for their keepalive to find a dead peer. With none up (a failure
// every apiserver shares: an etcd election, a revoked token) nothing is
// cut: a reconnect would find no better backend, and every watch would
// relist at the worst moment.
func (p *Pool) SetHealth(i int, h Health) {
	p.mu.Lock()
	was := p.st[i].Health
	p.st[i].Health = h
	if h == Up {
		p.st[i].DialFailed = false
	}
	var cuts []func()
	if h == Down && was != Down && p.othersUp(i) {
		for _, cut := range p.cuts[i] {
			cuts = append(cuts, cut)
		}
	}
	p.mu.Unlock()
	for _, cut := range cuts {
		cut()
	}
}

// othersUp says whether a backend other than i is up; under mu.
func (p *Pool) othersUp(i int) bool {
	for j, st := range p.st {
		if j != i && st.Health == Up {
			return true
		}
	}
	return false
}

// Carried registers cut as the way to end a connection backend i carries,
// until done is called.
func (p *Pool) Carried(i int, cut func()) (done func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutSeq++
	id := p.cutSeq
	if p.cuts[i] == nil {
		p.cuts[i] = map[uint64]func(){}
	}
	p.cuts[i][id] = cut
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.cuts[i], id)
	}
}

// CheckPassed says one check of backend i passed: a dial that failed
// before no longer keeps connections away.
func (p *Pool) CheckPassed(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st[i].DialFailed = false
}

// Status returns a copy of every backend's state.
func (p *Pool) Status() []BackendStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]BackendStatus(nil), p.st...)
}
