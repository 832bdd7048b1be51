package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/vrrp"
	"github.com/novaedge/cpvip/test/hostile"
	"github.com/novaedge/cpvip/test/lab"
)

var dropLine = regexp.MustCompile(`novaedge_cpvip_packets_dropped_total\{proto="(\w+)",reason="(\w+)"\} (\d+)`)

// drops reads a node's drop counters from /metrics.
func drops(t testing.TB, h *lab.Host, proto string) map[string]int {
	t.Helper()
	_, m, err := h.HTTPGet("http://127.0.0.1:9450/metrics")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, g := range dropLine.FindAllStringSubmatch(m, -1) {
		if g[1] == proto {
			n, _ := strconv.Atoi(g[3])
			out[g[2]] = n
		}
	}
	return out
}

func expected(pkts []hostile.Packet) (map[string]int, int) {
	want := map[string]int{}
	for _, p := range pkts {
		if p.Category != "random" {
			want[p.Category]++
		}
	}
	return want, len(pkts)
}

// checkDrops: every category counted (at least 95 %: a datagram may be lost),
// and nearly every packet dropped for some reason.
func checkDrops(t *testing.T, name string, got, want map[string]int, sent int) {
	t.Helper()
	total := 0
	for _, n := range got {
		total += n
	}
	for reason, n := range want {
		if got[reason]*100 < n*95 {
			t.Errorf("%s: %d drops for %s, sent %d", name, got[reason], reason, n)
		}
	}
	if total*100 < sent*95 {
		t.Errorf("%s: %d drops in all for %d hostile packets", name, total, sent)
	}
	t.Logf("%s: %d hostile packets, %d dropped, by reason %v", name, sent, total, got)
}

// attackedPair is two of our nodes with metrics, settled on one holder h,
// and a host x (192.0.2.99) on the same switch to send from.
func attackedPair(t *testing.T, extra ...string) (c *cluster, h int, x *lab.Host) {
	t.Helper()
	c = newCluster(t, 2, append([]string{"NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32", "NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450"}, extra...)...)
	c.startAll(t)
	h, _ = c.waitHolder(t, vip4, -1, 15*time.Second)
	c.stayOne(t, vip4, time.Second)
	x, err := c.AddHost("x", netip.MustParsePrefix("192.0.2.99/24"), netip.Prefix{}, false)
	if err != nil {
		t.Fatal(err)
	}
	return c, h, x
}

func TestHostileVRRPPackets(t *testing.T) {
	c, h, x := attackedPair(t)
	skip := []int{c.procs[0].Lines(), c.procs[1].Lines()}
	pkts := hostile.VRRP(rand.New(rand.NewPCG(5798, 1)), 300, 51, vip4.Addr(), netip.MustParseAddr("192.0.2.99"))
	mon := c.monitor(t, vip4)
	if err := lab.InNetns(x.NS, func() error { return hostile.SendVRRP(pkts, vrrp.GroupV4, "eth0") }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if double, most := mon.stop(); most != 1 {
		t.Errorf("holders changed during the attack: up to %d (double for %s)", most, double)
	}
	if got, _ := c.holders(vip4); len(got) != 1 || got[0] != h {
		t.Fatalf("holder %v after the attack, want %s", c.names(got), c.nodes[h].Name)
	}
	want, sent := expected(pkts)
	for i := range 2 {
		if code, err := c.procs[i].Wait(0); err == nil {
			t.Fatalf("n%d exited (%d) under attack", i+1, code)
		}
		if n := countLinesAfter(c.procs[i], skip[i], "VRRP state changed"); n != 0 {
			t.Errorf("n%d changed VRRP state %d times under attack", i+1, n)
		}
		checkDrops(t, fmt.Sprintf("n%d vrrp", i+1), drops(t, c.nodes[i], "vrrp"), want, sent)
	}
}

func TestHostileBFDPackets(t *testing.T) {
	b := newBGPLab(t, 1)
	b.startFRRWithBFD(t)
	b.start(t, 0, bfdEnv...)
	b.waitBFD(t, nodeV4(0), "up", 30*time.Second)
	b.waitHops(t, vip4, 30*time.Second, nodeV4(0))
	time.Sleep(3 * time.Second) // past FRR's one reset when BGP comes up
	b.waitBFD(t, nodeV4(0), "up", 30*time.Second)
	x, err := b.AddHost("x", netip.MustParsePrefix("198.51.100.99/24"), netip.Prefix{}, false)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := b.frr.BFDDownEvents()
	skip := b.procs[0].Lines()
	pkts := hostile.BFD(rand.New(rand.NewPCG(5880, 1)), 300)
	if err := lab.InNetns(x.NS, func() error { return hostile.SendBFD(pkts, nodeV4(0)) }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if n := countLinesAfter(b.procs[0], skip, "BFD session down"); n != 0 {
		t.Errorf("our BFD session went down %d times under attack", n)
	}
	after, _ := b.frr.BFDDownEvents()
	if after[nodeV4(0).String()] != before[nodeV4(0).String()] {
		t.Errorf("FRR saw the session go down during the attack")
	}
	b.waitHops(t, vip4, time.Second, nodeV4(0))
	want, sent := expected(pkts)
	checkDrops(t, "n1 bfd", drops(t, b.nodes[0], "bfd"), want, sent)
}

func countLinesAfter(p *lab.Process, skip int, part string) int {
	n := 0
	for i := skip; i < p.Lines(); i++ {
		if containsAll(p.Line(i), []string{part}) {
			n++
		}
	}
	return n
}

// TestUnicastIgnoresNonPeers: with NOVAEDGE_CP_VIP_PEERS set, a perfectly
// valid advertisement with priority 254 from an address that is not a peer
// is dropped (not_peer) and moves nothing.
func TestUnicastIgnoresNonPeers(t *testing.T) {
	c, h, x := attackedPair(t, "NOVAEDGE_CP_VIP_PEERS=192.0.2.11,192.0.2.12")
	attacker := netip.MustParseAddr("192.0.2.99")
	var pkts []hostile.Packet
	for range 200 {
		a := vrrp.Advertisement{VRID: 51, Priority: 254, Interval: 10, Addresses: []netip.Addr{vip4.Addr()}}
		for _, dst := range []netip.Addr{c.nodes[0].IPv4.Addr(), c.nodes[1].IPv4.Addr()} {
			pkts = append(pkts, hostile.Packet{Category: "not_peer", Payload: a.Marshal(nil, attacker, dst), TTL: 255})
		}
	}
	skip := []int{c.procs[0].Lines(), c.procs[1].Lines()}
	err := lab.InNetns(x.NS, func() error {
		for i, dst := range []netip.Addr{c.nodes[0].IPv4.Addr(), c.nodes[1].IPv4.Addr()} {
			var mine []hostile.Packet
			for j := i; j < len(pkts); j += 2 {
				mine = append(mine, pkts[j])
			}
			if err := hostile.SendVRRP(mine, dst, "eth0"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if got, _ := c.holders(vip4); len(got) != 1 || got[0] != h {
		t.Fatalf("holder %v after valid adverts from a non-peer, want %s", c.names(got), c.nodes[h].Name)
	}
	for i := range 2 {
		if n := countLinesAfter(c.procs[i], skip[i], "VRRP state changed"); n != 0 {
			t.Errorf("n%d changed state %d times", i+1, n)
		}
		if d := drops(t, c.nodes[i], "vrrp"); d["not_peer"] < 190 {
			t.Errorf("n%d counted %d not_peer drops for 200 adverts", i+1, d["not_peer"])
		} else {
			t.Logf("n%d dropped %d adverts from the non-peer", i+1, d["not_peer"])
		}
	}
}
