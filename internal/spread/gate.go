package spread

import (
	"cmp"
	"sync"
)

// The caps on what the proxy carries at once. A connection waiting for its
// backend's first answer costs about 50 KiB (its reads' buffers and three
// goroutines), one carried after it about 15 KiB (two goroutines; the
// bytes are spliced in the kernel). Past either cap the steering pauses:
// new connections reach the local apiserver, as without spreading, so a
// flood of connections to VIP:API_PORT (a client that opens thousands and
// sends nothing) bounds the daemon's memory — about 200 MiB at most — and
// leaves its health checks and election their share.
const (
	MaxGreeting = 1024
	MaxCarried  = 10000
)

// resumeBelow is the share of a cap under which a paused steering resumes:
// a load hovering at a cap does not flip it at every connection.
const resumeBelow = 0.9

// Gate counts the connections the proxies carry and pauses the steering
// past a cap. Safe for concurrent use.
type Gate struct {
	// Pause is called, under the gate's lock (flips arrive in order), with
	// true when a cap is reached and false when both counts are under
	// resumeBelow of their caps again, with the counts then (Spreader: the
	// steering's lease).
	Pause func(paused bool, greeting, carried int)

	mu                 sync.Mutex
	greeting, carried  int
	paused             bool
	maxGreet, maxCarry int // 0: MaxGreeting, MaxCarried (tests set smaller ones)
}

// Enter counts a connection accepted, waiting for its first answer.
func (g *Gate) Enter() { g.add(1, 1) }

// Greeted says an entered connection's backend answered.
func (g *Gate) Greeted() { g.add(-1, 0) }

// Leave ends an entered connection; greeting says it never got an answer.
func (g *Gate) Leave(greeting bool) {
	if greeting {
		g.add(-1, -1)
	} else {
		g.add(0, -1)
	}
}

// Unless runs f unless a cap holds the steering paused, under the lock (a
// renewal of the lease never races a pause).
func (g *Gate) Unless(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.paused {
		f()
	}
}

func (g *Gate) add(greeting, carried int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.greeting += greeting
	g.carried += carried
	maxGreet, maxCarry := cmp.Or(g.maxGreet, MaxGreeting), cmp.Or(g.maxCarry, MaxCarried)
	full := g.greeting >= maxGreet || g.carried >= maxCarry
	low := float64(g.greeting) < resumeBelow*float64(maxGreet) && float64(g.carried) < resumeBelow*float64(maxCarry)
	if full && !g.paused || low && g.paused {
		g.paused = !g.paused
		if g.Pause != nil {
			g.Pause(g.paused, g.greeting, g.carried)
		}
	}
}
