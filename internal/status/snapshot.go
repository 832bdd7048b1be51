package status

import "time"

// Snapshot is everything /status shows.
type Snapshot struct {
	Version   string          `json:"version"`
	Mode      string          `json:"mode"`
	Interface string          `json:"interface"`
	Started   time.Time       `json:"started"`
	Ready     bool            `json:"ready"`
	Health    Health          `json:"health"`
	VIPs      []VIP           `json:"vips"`
	FailOpen  FailOpen        `json:"fail_open"`
	VRRP      []VRRP          `json:"vrrp,omitempty"`
	BGPPeers  []BGPPeer       `json:"bgp_peers,omitempty"`
	BFD       []BFDSession    `json:"bfd_sessions,omitempty"`
	Spread    []SpreadBackend `json:"spread_backends,omitempty"`
	// SpreadActive: new connections to the VIP are spread now (SPREAD on and started).
	SpreadActive bool                         `json:"spread_active,omitempty"`
	Reconcile    map[string]uint64            `json:"reconcile_actions"`
	Drops        map[string]map[string]uint64 `json:"packets_dropped,omitempty"` // proto -> reason -> count
	// SendFailures counts what could not be sent or changed, by kind:
	// vrrp (advertisements), garp (gratuitous ARP / NA), bgp_route
	// (announcements and withdrawals, each retried).
	SendFailures map[string]uint64 `json:"send_failures"`
	// ConflictsDetected counts the times another host was found answering
	// for a VIP (L2 address conflict detection).
	ConflictsDetected uint64 `json:"conflicts_detected"`
	// ConflictsDefended counts the times this node defended a VIP it held
	// against another host's first answer (RFC 5227: announced it again).
	ConflictsDefended uint64 `json:"conflicts_defended"`
	// Reloads counts the reloads asked (SIGHUP) by result: ok (applied,
	// perhaps partly: what needs a restart is logged) or refused (the
	// file is invalid or missing: the running configuration kept).
	Reloads     map[string]uint64 `json:"config_reloads"`
	Transitions []Transition      `json:"transitions"`
}

// Health is the apiserver check's state.
type Health struct {
	State string `json:"state"` // unknown, healthy, unhealthy, draining
	// Settled: healthy, and the latest checks passed since the latest
	// failure (what a takeover from a live master waits for).
	Settled      bool              `json:"settled"`
	URL          string            `json:"url"`
	LastStatus   int               `json:"last_status"`
	LastReason   string            `json:"last_reason,omitempty"`
	LastDuration time.Duration     `json:"last_duration_ns"`
	Checks       map[string]uint64 `json:"checks"` // result -> count
}

// FailOpen says whether this node keeps the VIP although its own check
// fails (L2: no node is healthy; BGP: its route is demoted), and why.
type FailOpen struct {
	Enabled  bool   `json:"enabled"`  // NOVAEDGE_CP_VIP_FAIL_OPEN
	InForce  bool   `json:"in_force"` // holding the VIP while unhealthy
	Reason   string `json:"reason,omitempty"`
	Priority uint8  `json:"vrrp_priority,omitempty"` // L2: our current VRRP priority
}

// VIP is one VIP and whether this node holds it.
type VIP struct {
	Address string `json:"address"`
	Held    bool   `json:"held"`
	// Conflict: another host answers for the VIP (L2): it is not bound here
	// until that host stops.
	Conflict *Conflict `json:"conflict,omitempty"`
}

// Conflict is another host answering for a VIP.
type Conflict struct {
	MAC   string    `json:"mac"`
	Since time.Time `json:"since"`
}

// VRRP is one election instance.
type VRRP struct {
	VIP      string    `json:"vip"`
	State    string    `json:"state"`
	Master   string    `json:"master,omitempty"`
	Primary  string    `json:"primary,omitempty"`
	Priority uint8     `json:"priority"` // advertised; 0 = not a candidate
	Sent     uint64    `json:"adverts_sent"`
	Received uint64    `json:"adverts_received"`
	Since    time.Time `json:"since"`
	Reason   string    `json:"reason,omitempty"`
	// OtherGroups: routers heard on our VRID with another address list
	// ("source addresses"): another group that picked the same VRID.
	OtherGroups []string `json:"other_groups,omitempty"`
}

// BGPPeer is one BGP neighbour.
type BGPPeer struct {
	Address string    `json:"address"`
	AS      uint32    `json:"as"`
	State   string    `json:"state"`
	Since   time.Time `json:"since"`
	Reason  string    `json:"reason,omitempty"`
}

// BFDSession is one BFD session.
type BFDSession struct {
	Peer       string        `json:"peer"`
	State      string        `json:"state"`
	Diag       string        `json:"diag"`
	RemoteDiag string        `json:"remote_diag"`
	TxInterval time.Duration `json:"tx_interval_ns"`
	RxInterval time.Duration `json:"rx_interval_ns"`
	Since      time.Time     `json:"since"`
}

// SpreadBackend is one apiserver that L2 spreading carries connections to.
type SpreadBackend struct {
	Address      string `json:"address"`
	Local        bool   `json:"local,omitempty"`
	Health       string `json:"health"` // unknown, up, draining, down
	DialFailed   bool   `json:"dial_failed,omitempty"`
	Active       int    `json:"active_connections"`
	Connections  uint64 `json:"connections"`
	Adopted      uint64 `json:"adopted_connections"` // of those, carried by a previous run (systemd's descriptor store)
	DialFailures uint64 `json:"dial_failures"`
}

// Transition is a change of this node's role, with its reason.
type Transition struct {
	At     time.Time `json:"at"`
	To     string    `json:"to"` // held, released, healthy, unhealthy
	VIP    string    `json:"vip,omitempty"`
	Reason string    `json:"reason"`
}
