package bgp

// Standing is what a BGP node's routes to the VIPs say of it.
type Standing int

const (
	// Withdrawn: no route. Not healthy once since it started, or unhealthy
	// without fail open.
	Withdrawn Standing = iota
	// Announced: healthy, its routes as configured.
	Announced
	// Demoted: unhealthy after having been healthy, with fail open: its
	// routes stay, demoted (Demotion), so the routers use it only while no
	// node is healthy.
	Demoted
)

func (s Standing) String() string {
	return [...]string{"withdrawn", "announced", "demoted"}[s]
}

// Holds says whether the node's routes are announced (demoted or not).
func (s Standing) Holds() bool { return s != Withdrawn }

// Part is a BGP node's part in announcing the VIPs: every healthy node
// announces them; what an unhealthy one does depends on fail open and on
// whether it was healthy since it started.
type Part struct {
	failOpen bool
	seen     bool // healthy at least once since start
}

// NewPart returns the part of a node that has not been healthy yet.
func NewPart(failOpen bool) *Part { return &Part{failOpen: failOpen} }

// Health takes the apiserver's health and returns the node's standing.
func (p *Part) Health(ok bool) Standing {
	p.seen = p.seen || ok
	switch {
	case ok:
		return Announced
	case p.seen && p.failOpen:
		return Demoted
	default:
		return Withdrawn
	}
}
