package bgp

import (
	"context"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v4/api"
)

// An IPv6 VIP with no IPv6 peer is announced over the IPv4 sessions
// (MP-BGP, RFC 4760), as kube-vip does. Its next hop must be a real IPv6
// address of the node on the link toward that peer: GoBGP would otherwise put
// the IPv4 session address in as ::ffff:a.b.c.d, which routers reject. The
// path itself keeps the unspecified next hop; a global export policy sets
// each such peer's own (peers on different links need different ones).

// exportPolicy is the name of the policy that sets cross-family next hops.
const exportPolicy = "cpvip-ipv6-next-hop"

// crossFamily returns the peers that carry IPv6 routes over IPv4 sessions.
func (sp *Speaker) crossFamily() []Peer {
	var out []Peer
	for _, p := range sp.cfg.Peers {
		if p.Address.Is4() && p.NextHop6.IsValid() {
			out = append(out, p)
		}
	}
	return out
}

// families returns the unicast families a session with p carries.
func families(p Peer) []*api.AfiSafi {
	fams := []api.Family_Afi{api.Family_AFI_IP}
	switch {
	case p.Address.Is6():
		fams = []api.Family_Afi{api.Family_AFI_IP6}
	case p.NextHop6.IsValid():
		fams = append(fams, api.Family_AFI_IP6)
	}
	out := make([]*api.AfiSafi, len(fams))
	for i, afi := range fams {
		out[i] = &api.AfiSafi{Config: &api.AfiSafiConfig{
			Family: &api.Family{Afi: afi, Safi: api.Family_SAFI_UNICAST}, Enabled: true}}
	}
	return out
}

// nextHopPolicy is the export policy: one statement per cross-family peer,
// matching that peer and IPv6 unicast, setting its next hop; it accepts
// nothing by itself, so every route still goes out (default accept).
func nextHopPolicy(peers []Peer) ([]*api.DefinedSet, *api.Policy) {
	sets := make([]*api.DefinedSet, 0, len(peers))
	pol := &api.Policy{Name: exportPolicy}
	for _, p := range peers {
		name := "cpvip-peer-" + p.Address.String()
		sets = append(sets, &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: name,
			List: []string{netip.PrefixFrom(p.Address, p.Address.BitLen()).String()}})
		pol.Statements = append(pol.Statements, &api.Statement{
			Name: name,
			Conditions: &api.Conditions{
				NeighborSet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: name},
				AfiSafiIn:   []*api.Family{{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}},
			},
			Actions: &api.Actions{Nexthop: &api.NexthopAction{Address: p.NextHop6.String()}},
		})
	}
	return sets, pol
}

// addNextHopPolicy installs nextHopPolicy when some peer needs it.
func (sp *Speaker) addNextHopPolicy(ctx context.Context) error {
	peers := sp.crossFamily()
	if len(peers) == 0 {
		return nil
	}
	sets, pol := nextHopPolicy(peers)
	for _, s := range sets {
		if err := sp.s.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: s}); err != nil {
			return fmt.Errorf("adding BGP neighbor set %s: %w", s.Name, err)
		}
	}
	if err := sp.s.AddPolicy(ctx, &api.AddPolicyRequest{Policy: pol}); err != nil {
		return fmt.Errorf("adding BGP export policy: %w", err)
	}
	err := sp.s.AddPolicyAssignment(ctx, &api.AddPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
		Name: "global", Direction: api.PolicyDirection_POLICY_DIRECTION_EXPORT,
		Policies: []*api.Policy{{Name: exportPolicy}}, DefaultAction: api.RouteAction_ROUTE_ACTION_ACCEPT}})
	if err != nil {
		return fmt.Errorf("assigning BGP export policy: %w", err)
	}
	for _, p := range peers {
		sp.log.Info("IPv6 VIP routes go over an IPv4 session (MP-BGP)", "peer", p.Address, "next_hop", p.NextHop6)
	}
	return nil
}
