package bgp

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"
)

// Peer is one BGP neighbour.
type Peer struct {
	Address  netip.Addr
	AS       uint32
	Password string // TCP MD5 for this peer; empty = Config.Password; never logged
	Multihop uint8  // eBGP multihop TTL for this peer; 0 = Config.Multihop
	// NextHop6, on an IPv4 peer, makes the session carry IPv6 routes too
	// (MP-BGP) with this next hop; see crossfamily.go.
	NextHop6 netip.Addr
}

// Config is what a Speaker needs; cmd fills it from config.Config.
type Config struct {
	LocalAS     uint32
	RouterID    netip.Addr
	Peers       []Peer
	Password    string // TCP MD5 for every peer; never logged
	HoldTime    time.Duration
	Multihop    uint8 // eBGP multihop TTL; 0 = directly connected
	NextHop     netip.Addr
	Communities []uint32
}

// Timers we set instead of GoBGP's defaults (connect-retry 120 s, idle hold
// after a reset 30 s): a session must come back within seconds.
const (
	connectRetry           = 1 // seconds
	idleHoldTimeAfterReset = 1 // seconds
)

// PeerStatus is what /status and metrics show of a peer.
type PeerStatus struct {
	Address netip.Addr
	AS      uint32
	State   string // idle, connect, active, opensent, openconfirm, established
	Since   time.Time
	Reason  string // why it last went down, when known
}

// Speaker is the embedded BGP speaker.
type Speaker struct {
	cfg Config
	log *slog.Logger
	s   *server.BgpServer

	mu      sync.Mutex
	peers   map[netip.Addr]*PeerStatus
	stopped bool
	// reconnected is when each peer was last re-created (reconnect.go).
	reconnected map[netip.Addr]time.Time
}

// New returns a Speaker; Start runs it.
func New(cfg Config, log *slog.Logger) *Speaker {
	lv := new(slog.LevelVar)
	lv.Set(slog.LevelWarn) // GoBGP is chatty at info
	if log.Enabled(context.Background(), slog.LevelDebug) {
		lv.Set(slog.LevelDebug)
	}
	sp := &Speaker{cfg: cfg, log: log, peers: map[netip.Addr]*PeerStatus{}, reconnected: map[netip.Addr]time.Time{},
		s: server.NewBgpServer(server.LoggerOption(log.With("component", "gobgp"), lv))}
	for _, p := range cfg.Peers {
		sp.peers[p.Address] = &PeerStatus{Address: p.Address, AS: p.AS, State: "idle", Since: time.Now()}
	}
	return sp
}

// Start starts the server, watches peer events and adds every peer.
func (sp *Speaker) Start(ctx context.Context) error {
	go sp.s.Serve()
	// Only the unicast families: without a list GoBGP makes a table for
	// each of the thirty it knows, twice (global and route-server RIB),
	// each of 2048 map shards: 9 MiB of an idle daemon's 11 MiB heap.
	unicast := []uint32{uint32(oc.AfiSafiTypeToIntMap[oc.AFI_SAFI_TYPE_IPV4_UNICAST]),
		uint32(oc.AfiSafiTypeToIntMap[oc.AFI_SAFI_TYPE_IPV6_UNICAST])}
	err := sp.s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn: sp.cfg.LocalAS, RouterId: sp.cfg.RouterID.String(), ListenPort: -1, Families: unicast,
	}})
	if err != nil {
		return fmt.Errorf("starting BGP: %w", err)
	}
	err = sp.s.WatchEvent(ctx, server.WatchEventMessageCallbacks{OnPeerUpdate: sp.peerEvent}, server.WatchPeer())
	if err != nil {
		return fmt.Errorf("watching BGP peers: %w", err)
	}
	if err := sp.addNextHopPolicy(ctx); err != nil {
		return err
	}
	for _, p := range sp.cfg.Peers {
		if err := sp.s.AddPeer(ctx, &api.AddPeerRequest{Peer: sp.apiPeer(p)}); err != nil {
			return fmt.Errorf("adding BGP peer %s: %w", p.Address, err)
		}
	}
	return nil
}

func (sp *Speaker) apiPeer(p Peer) *api.Peer {
	hold := uint64(sp.cfg.HoldTime / time.Second)
	password, multihop := cmp.Or(p.Password, sp.cfg.Password), cmp.Or(p.Multihop, sp.cfg.Multihop)
	peer := &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: p.Address.String(), PeerAsn: p.AS, AuthPassword: password},
		Timers: &api.Timers{Config: &api.TimersConfig{HoldTime: hold, KeepaliveInterval: max(hold/3, 1),
			ConnectRetry: connectRetry, IdleHoldTimeAfterReset: idleHoldTimeAfterReset}},
		AfiSafis: families(p),
	}
	if multihop > 0 {
		peer.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(multihop)}
	}
	return peer
}

// Announce advertises vip to the peers of its address family, and an IPv6
// VIP to the IPv4 peers with a NextHop6 (idempotent); demoted, with a route
// every router ranks below a healthy node's (see Demotion).
func (sp *Speaker) Announce(vip netip.Prefix, demoted bool) error {
	p, err := sp.path(vip, false, demoted)
	if err != nil {
		return err
	}
	if _, err := sp.s.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{p}}); err != nil {
		return fmt.Errorf("announcing %s: %w", vip, err)
	}
	return nil
}

// Withdraw withdraws vip.
func (sp *Speaker) Withdraw(vip netip.Prefix) error {
	p, err := sp.path(vip, true, false)
	if err != nil {
		return err
	}
	if err := sp.s.DeletePath(apiutil.DeletePathRequest{Paths: []*apiutil.Path{p}}); err != nil {
		return fmt.Errorf("withdrawing %s: %w", vip, err)
	}
	return nil
}

// path builds the route of vip as a host route (/32 or /128).
// A demoted one (see Demotion) carries GRACEFUL_SHUTDOWN and a prepended
// AS path.
func (sp *Speaker) path(vip netip.Prefix, withdraw, demoted bool) (*apiutil.Path, error) {
	communities := sp.cfg.Communities
	if demoted {
		communities = append(slices.Clip(communities), GracefulShutdown)
	}
	p, err := HostRoute(vip, sp.cfg.NextHop, communities, withdraw)
	if err == nil && demoted {
		p.Attrs = append(p.Attrs, prependedASPath(sp.cfg.LocalAS))
	}
	return p, err
}

// HostRoute builds the GoBGP path of vip as a host route (/32 or /128) with
// ORIGIN IGP, nextHop when it is of vip's family (else the session's
// address) and communities.
func HostRoute(vip netip.Prefix, nextHop netip.Addr, communities []uint32, withdraw bool) (*apiutil.Path, error) {
	host := netip.PrefixFrom(vip.Addr(), vip.Addr().BitLen())
	nlri, err := bgp.NewIPAddrPrefix(host)
	if err != nil {
		return nil, fmt.Errorf("building NLRI for %s: %w", host, err)
	}
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP)}
	family := bgp.RF_IPv4_UC
	nh := netip.IPv4Unspecified() // GoBGP puts the session's address in
	if vip.Addr().Is6() {
		family, nh = bgp.RF_IPv6_UC, netip.IPv6Unspecified()
	}
	if nextHop.IsValid() && nextHop.Is6() == vip.Addr().Is6() {
		nh = nextHop
	}
	if family == bgp.RF_IPv4_UC {
		a, err := bgp.NewPathAttributeNextHop(nh)
		if err != nil {
			return nil, fmt.Errorf("next hop %s: %w", nh, err)
		}
		attrs = append(attrs, a)
	} else {
		a, err := bgp.NewPathAttributeMpReachNLRI(family, []bgp.PathNLRI{{NLRI: nlri}}, nh)
		if err != nil {
			return nil, fmt.Errorf("next hop %s: %w", nh, err)
		}
		attrs = append(attrs, a)
	}
	if len(communities) > 0 {
		attrs = append(attrs, bgp.NewPathAttributeCommunities(communities))
	}
	return &apiutil.Path{Family: family, Nlri: nlri, Attrs: attrs, Withdrawal: withdraw}, nil
}

// ResetPeer drops the session with addr at once (BFD said the path is down)
// and starts connecting again; see reconnect.
func (sp *Speaker) ResetPeer(ctx context.Context, addr netip.Addr, why string) error {
	sp.log.Debug("BGP session reset", "peer", addr, "why", why)
	return sp.reconnect(ctx, addr)
}

// Stop sends Cease to every peer and stops the server. Call it once.
func (sp *Speaker) Stop() {
	sp.mu.Lock()
	sp.stopped = true
	sp.mu.Unlock()
	sp.s.Stop()
}

func (sp *Speaker) peerEvent(ev *apiutil.WatchEventMessage_PeerEvent, at time.Time) {
	if ev.Type != apiutil.PEER_EVENT_STATE {
		return
	}
	addr := ev.Peer.State.NeighborAddress
	if !addr.IsValid() {
		addr = ev.Peer.Conf.NeighborAddress
	}
	state := fsmName(ev.Peer.State.SessionState)
	sp.mu.Lock()
	ps, ok := sp.peers[addr]
	if !ok || ps.State == state {
		sp.mu.Unlock()
		return
	}
	prev, sinceLast := ps.State, at.Sub(sp.reconnected[addr])
	ps.State, ps.Since = state, at
	switch msg := ev.Peer.State.DisconnectMessage; {
	case state == "established":
		ps.Reason = ""
	case msg != "" && prev == "established":
		ps.Reason = msg
	}
	reason := ps.Reason
	sp.mu.Unlock()
	if prev == "established" && droppedByPeer(reason, sinceLast) {
		go sp.reconnectAfterDrop(addr)
	}
	switch {
	case state == "established":
		sp.log.Info("BGP session established", "peer", addr, "as", ps.AS)
	case prev == "established":
		sp.log.Warn("BGP session down", "peer", addr, "state", state, "reason", reason)
	default:
		sp.log.Debug("BGP peer state changed", "peer", addr, "from", prev, "to", state)
	}
}

// Peers returns a snapshot of every peer.
func (sp *Speaker) Peers() []PeerStatus {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	out := make([]PeerStatus, 0, len(sp.cfg.Peers))
	for _, p := range sp.cfg.Peers {
		out = append(out, *sp.peers[p.Address])
	}
	return out
}

func fsmName(s bgp.FSMState) string {
	switch s {
	case bgp.BGP_FSM_IDLE:
		return "idle"
	case bgp.BGP_FSM_CONNECT:
		return "connect"
	case bgp.BGP_FSM_ACTIVE:
		return "active"
	case bgp.BGP_FSM_OPENSENT:
		return "opensent"
	case bgp.BGP_FSM_OPENCONFIRM:
		return "openconfirm"
	case bgp.BGP_FSM_ESTABLISHED:
		return "established"
	}
	return "unknown"
}
