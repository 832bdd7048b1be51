package e2e

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// TestVRRPForeignGroupsOnOurVRID: two of our groups and a keepalived pair's
// master for another address share one segment and VRID 51 (the default,
// and keepalived's sample). Each keeps its own VIP: advertisements whose
// address list is not ours are not part of our election.
func TestVRRPForeignGroupsOnOurVRID(t *testing.T) {
	needKeepalived(t)
	groupB := netip.MustParsePrefix("192.0.2.101/32")
	other := netip.MustParsePrefix("192.0.2.200/32")
	c := newCluster(t, 4, v4only)
	for _, i := range []int{2, 3} {
		c.env[i] = []string{"NOVAEDGE_CP_VIP_ADDRESS=" + groupB.String()}
	}
	ka, kp := c.addKeepalived(t, "ka", lab.Keepalived{VRID: 51, Priority: 200, Advert: "0.1", VIP: other.String()})
	waitLine(t, kp, 0, "Entering MASTER STATE")
	c.startAll(t)
	want := map[netip.Prefix][]int{vip4: {0, 1}, groupB: {2, 3}, other: {ka}}
	for p := range want {
		c.waitHolder(t, p, -1, 15*time.Second)
	}
	good := 0
	const samples = 100
	for range samples {
		ok := true
		for p, members := range want {
			hs, err := c.holders(p)
			if err != nil {
				t.Fatal(err)
			}
			ok = ok && len(hs) == 1 && slices.Contains(members, hs[0])
		}
		if ok {
			good++
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("FIGURE samples with each group holding its own VIP once: %d of %d", good, samples)
	if good != samples {
		t.Errorf("each group held its VIP in %d of %d samples", good, samples)
	}
	kaAddr := c.nodes[ka].IPv4.Addr()
	for i := range 4 {
		if n := lines(c.procs[i], "Another VRRP group uses our VRID", "source="+kaAddr.String()); n != 1 {
			t.Errorf("%s logged keepalived's group %d times, want once", c.nodes[i].Name, n)
		}
	}
	for _, p := range []netip.Prefix{vip4, groupB} {
		h, _ := c.waitHolder(t, p, -1, time.Second)
		c.reach(t, p.Addr(), h)
	}
}
