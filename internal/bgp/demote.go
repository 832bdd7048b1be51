package bgp

import (
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// Demotion: a node whose apiserver fails, with fail open on, keeps its VIP
// route but makes it worse than any healthy node's, instead of withdrawing
// it. Routers then send traffic only to the healthy nodes while there is
// one (a longer AS path leaves the ECMP set), and to every node when none
// is healthy (equal demoted paths: fail open) — what load balancers call a
// panic threshold. Two signals, so that a router honouring either works:
//   - the AS path prepended with our AS demotePrepend more times (every BGP
//     implementation compares AS-path length), and
//   - the GRACEFUL_SHUTDOWN community of RFC 8326 (routers that honour it,
//     FRR by default, set LOCAL_PREF 0, which ranks before path length).
// The node keeps the VIP bound meanwhile, so a flow the router still sends
// it until it switches is answered (or refused at once), not dropped.

// demotePrepend is how many times a demoted route carries our AS in addition.
const demotePrepend = 3

// GracefulShutdown is the well-known community 65535:0 (RFC 8326).
const GracefulShutdown = 0xFFFF0000

// prependedASPath is the AS_PATH of a demoted route: our AS demotePrepend
// times (GoBGP adds it once more towards eBGP peers).
func prependedASPath(localAS uint32) bgp.PathAttributeInterface {
	asns := make([]uint32, demotePrepend)
	for i := range asns {
		asns[i] = localAS
	}
	return bgp.NewPathAttributeAsPath([]bgp.AsPathParamInterface{bgp.NewAs4PathParam(bgp.BGP_ASPATH_ATTR_TYPE_SEQ, asns)})
}
