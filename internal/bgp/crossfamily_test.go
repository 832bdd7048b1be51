package bgp

import (
	"net/netip"
	"testing"

	api "github.com/osrg/gobgp/v4/api"
)

// TestIPv6OverIPv4Peers: an IPv4 peer with an IPv6 next hop carries both
// families and gets a policy statement setting that next hop on IPv6 routes
// sent to it only; other peers carry their own family and get none.
func TestIPv6OverIPv4Peers(t *testing.T) {
	mp := Peer{Address: netip.MustParseAddr("192.0.2.1"), AS: 65001, NextHop6: netip.MustParseAddr("2001:db8:3::11")}
	plain := Peer{Address: netip.MustParseAddr("198.51.100.1"), AS: 65001}
	v6 := Peer{Address: netip.MustParseAddr("2001:db8::1"), AS: 65001}
	for _, tt := range []struct {
		p    Peer
		want []api.Family_Afi
	}{{mp, []api.Family_Afi{api.Family_AFI_IP, api.Family_AFI_IP6}}, {plain, []api.Family_Afi{api.Family_AFI_IP}}, {v6, []api.Family_Afi{api.Family_AFI_IP6}}} {
		got := families(tt.p)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %d families, want %v", tt.p.Address, len(got), tt.want)
		}
		for i, f := range got {
			if f.Config.Family.Afi != tt.want[i] || f.Config.Family.Safi != api.Family_SAFI_UNICAST {
				t.Errorf("%s: family %d = %v, want %v unicast", tt.p.Address, i, f.Config.Family, tt.want[i])
			}
		}
	}
	sp := &Speaker{cfg: Config{Peers: []Peer{mp, plain, v6}}}
	sets, pol := nextHopPolicy(sp.crossFamily())
	if len(sets) != 1 || sets[0].List[0] != "192.0.2.1/32" || len(pol.Statements) != 1 {
		t.Fatalf("sets %v, statements %v", sets, pol.Statements)
	}
	st := pol.Statements[0]
	if st.Conditions.NeighborSet.Name != sets[0].Name || st.Conditions.AfiSafiIn[0].Afi != api.Family_AFI_IP6 ||
		st.Actions.Nexthop.Address != "2001:db8:3::11" || st.Actions.RouteAction != api.RouteAction_ROUTE_ACTION_UNSPECIFIED {
		t.Errorf("statement %v", st)
	}
}
