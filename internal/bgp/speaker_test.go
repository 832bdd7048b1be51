package bgp

import (
	"net/netip"
	"testing"
	"time"
)

// TestPeerOptionsOverrideGlobal: a peer's own password and multihop win over
// the global ones; a peer without them gets the global ones.
func TestPeerOptionsOverrideGlobal(t *testing.T) {
	sp := &Speaker{cfg: Config{Password: "global", Multihop: 2, HoldTime: 9 * time.Second}}
	own := sp.apiPeer(Peer{Address: netip.MustParseAddr("192.0.2.1"), AS: 65001, Password: "own", Multihop: 5})
	if own.Conf.AuthPassword != "own" || own.EbgpMultihop.MultihopTtl != 5 {
		t.Errorf("peer with options: password %q, multihop %v", own.Conf.AuthPassword, own.EbgpMultihop)
	}
	def := sp.apiPeer(Peer{Address: netip.MustParseAddr("192.0.2.2"), AS: 65001})
	if def.Conf.AuthPassword != "global" || def.EbgpMultihop.MultihopTtl != 2 {
		t.Errorf("peer without options: password %q, multihop %v", def.Conf.AuthPassword, def.EbgpMultihop)
	}
	none := (&Speaker{cfg: Config{HoldTime: 9 * time.Second}}).apiPeer(Peer{Address: netip.MustParseAddr("2001:db8::1"), AS: 65001})
	if none.Conf.AuthPassword != "" || none.EbgpMultihop != nil {
		t.Errorf("no options anywhere: password %q, multihop %v", none.Conf.AuthPassword, none.EbgpMultihop)
	}
}
