package e2e

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

var (
	routerV4 = netip.MustParseAddr("198.51.100.1")
	routerV6 = netip.MustParseAddr("2001:db8:1::1")
)

// bgpLab is n nodes and a router on one switch, and a client behind the router.
type bgpLab struct {
	*lab.Lab
	nodes  []*lab.Host
	apis   []*lab.APIServer
	procs  []*lab.Process
	router *lab.Host
	client *lab.Host
	frr    *lab.FRR
}

func nodeV4(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 51, 100, byte(11 + i)}) }
func nodeV6(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("2001:db8:1::%x", 0x11+i)) }

func newBGPLab(t testing.TB, n int) *bgpLab { return newBGPLabOf(t, n, true) }

// newBGPLabOf is newBGPLab, with stand-in apiservers on the nodes or none.
func newBGPLabOf(t testing.TB, n int, standIn bool) *bgpLab {
	t.Helper()
	l, err := lab.New(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	b := &bgpLab{Lab: l, procs: make([]*lab.Process, n)}
	if b.router, err = l.AddHost("r", netip.PrefixFrom(routerV4, 24), netip.PrefixFrom(routerV6, 64), false); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		h, err := l.AddHost(fmt.Sprintf("n%d", i+1), netip.PrefixFrom(nodeV4(i), 24), netip.PrefixFrom(nodeV6(i), 64), false)
		if err != nil {
			t.Fatal(err)
		}
		var api *lab.APIServer
		if standIn {
			if api, err = h.StartAPIServer(6443); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.DefaultRoute(routerV4, routerV6); err != nil {
			t.Fatal(err)
		}
		b.nodes, b.apis = append(b.nodes, h), append(b.apis, api)
	}
	if b.client, err = l.AddBareHost("cl"); err != nil {
		t.Fatal(err)
	}
	err = l.Link(b.router, "eth1", []netip.Prefix{netip.MustParsePrefix("203.0.113.1/24"), netip.MustParsePrefix("2001:db8:2::1/64")},
		b.client, "eth0", []netip.Prefix{netip.MustParsePrefix("203.0.113.2/24"), netip.MustParsePrefix("2001:db8:2::2/64")})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.client.DefaultRoute(netip.MustParseAddr("203.0.113.1"), netip.MustParseAddr("2001:db8:2::1")); err != nil {
		t.Fatal(err)
	}
	if err := b.router.Router(); err != nil {
		t.Fatal(err)
	}
	return b
}

// frrConfig is the router's bgpd.conf: every node a neighbour in AS 65002,
// over IPv4 and (v6) IPv6, with ECMP; password applies to every neighbour.
func (b *bgpLab) frrConfig(v6 bool, password string) string {
	var neighbors []netip.Addr
	for i := range b.nodes {
		neighbors = append(neighbors, nodeV4(i))
		if v6 {
			neighbors = append(neighbors, nodeV6(i))
		}
	}
	return lab.BGPRouterConfig(routerV4, 65002, neighbors, password, false)
}

func (b *bgpLab) startFRR(t testing.TB, v6 bool, password string) {
	t.Helper()
	f, err := b.router.StartFRR(lab.FRRConfig{BGP: b.frrConfig(v6, password)})
	if err != nil {
		t.Fatal(err)
	}
	b.frr = f
}

// start runs our daemon in BGP mode on node i.
func (b *bgpLab) start(t testing.TB, i int, extra ...string) *lab.Process {
	t.Helper()
	env := []string{
		"NOVAEDGE_CP_VIP_MODE=bgp", "NOVAEDGE_CP_VIP_ADDRESS=" + vip4.String(),
		"NOVAEDGE_CP_VIP_HEALTH_INTERVAL=100ms", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=300ms",
		"NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450", "NOVAEDGE_CP_VIP_SA_TOKEN_PATH=/nonexistent",
		"NOVAEDGE_BGP_LOCAL_AS=65002", "NOVAEDGE_BGP_ROUTER_ID=" + nodeV4(i).String(),
		"NOVAEDGE_BGP_PEERS=" + routerV4.String() + "@65001",
	}
	p, err := b.nodes[i].Start(b.nodes[i].Name, append(env, extra...), binary, "run")
	if err != nil {
		t.Fatal(err)
	}
	b.procs[i] = p
	return p
}

// waitHops waits until the router's FIB route to p has exactly want as next hops.
func (b *bgpLab) waitHops(t testing.TB, p netip.Prefix, within time.Duration, want ...netip.Addr) time.Duration {
	t.Helper()
	start := time.Now()
	if err := lab.Eventually(within, b.router.RoutedVia(p, want...)); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

func TestBGPECMPWithdrawAndRecover(t *testing.T) {
	b := newBGPLab(t, 3)
	b.startFRR(t, false, "")
	for i := range b.nodes {
		b.start(t, i)
	}
	all := []netip.Addr{nodeV4(0), nodeV4(1), nodeV4(2)}
	figure(t, "router installs the VIP with three next hops (ECMP) after start", b.waitHops(t, vip4, 30*time.Second, all...))
	if hops, _ := b.frr.NextHops(vip4); len(hops) != 3 {
		t.Errorf("FRR's route to the VIP has next hops %v", hops)
	}
	seen := map[string]bool{}
	for range 30 { // new connections hash over the next hops
		who, err := b.client.Whoami(vip4.Addr(), 6443, 2*time.Second)
		if err != nil {
			t.Fatalf("client via the router: %v", err)
		}
		seen[who] = true
	}
	t.Logf("client connections through the router were answered by %v", seen)
	if len(seen) < 2 {
		t.Errorf("30 connections all went to %v: no ECMP spread", seen)
	}

	// n1's apiserver dies: its route is demoted (fail open) and leaves the
	// router's ECMP set; recovery brings it back.
	if err := b.apis[0].Set(lab.ServerError); err != nil {
		t.Fatal(err)
	}
	figure(t, "n1's next hop out of the router's ECMP set after its apiserver fails (3 x 100 ms checks)", b.waitHops(t, vip4, 10*time.Second, all[1:]...))
	waitLine(t, b.procs[0], 0, "VIP route announced", "address=192.0.2.100/32", "demoted=true")
	if out, _ := b.nodes[0].Exec("ip", "-j", "addr", "show", "dev", "lo"); !strings.Contains(out, "192.0.2.100") {
		t.Error("n1 removed the VIP from lo although its route is only demoted")
	}
	if err := b.apis[0].Set(lab.OK); err != nil {
		t.Fatal(err)
	}
	figure(t, "n1's next hop back after its apiserver recovers", b.waitHops(t, vip4, 10*time.Second, all...))
	failOpenBGP(t, b, all)

	// SIGTERM on n2: withdrawn within a second, exit 0, VIP off lo.
	sig := time.Now()
	if err := b.procs[1].Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d := b.waitHops(t, vip4, 5*time.Second, nodeV4(0), nodeV4(2))
	figure(t, "n2's next hop gone after SIGTERM", time.Since(sig))
	if d > time.Second {
		t.Errorf("withdraw after SIGTERM took %s, want within 1 s", d)
	}
	if code, err := b.procs[1].Wait(2 * time.Second); code != 0 || err != nil {
		t.Errorf("exit %d, %v", code, err)
	}
	if out, _ := b.nodes[1].Exec("ip", "-j", "addr", "show", "dev", "lo"); strings.Contains(out, "192.0.2.100") {
		t.Error("VIP still on lo after SIGTERM")
	}
	waitLine(t, b.procs[1], 0, "VIP routes withdrawn, stopping BGP")
}

func TestBGPRouterRestartIsSurvived(t *testing.T) {
	b := newBGPLab(t, 2)
	b.startFRR(t, false, "")
	b.start(t, 0)
	b.start(t, 1)
	both := []netip.Addr{nodeV4(0), nodeV4(1)}
	b.waitHops(t, vip4, 30*time.Second, both...)
	if err := b.frr.Restart("bgpd"); err != nil {
		t.Fatal(err)
	}
	b.waitHops(t, vip4, 10*time.Second) // gone with bgpd
	figure(t, "VIP route back after bgpd was killed and started again (no restart of ours)", b.waitHops(t, vip4, 60*time.Second, both...))
	for _, p := range b.procs[:2] {
		if code, err := p.Wait(0); err == nil {
			t.Errorf("our daemon exited (%d) during the router restart", code)
		}
	}
}

func TestBGPMD5(t *testing.T) {
	b := newBGPLab(t, 2)
	b.startFRR(t, false, "s3cret-md5")
	b.start(t, 0, "NOVAEDGE_BGP_PASSWORD=s3cret-md5")
	b.start(t, 1, "NOVAEDGE_BGP_PASSWORD=wrong-key")
	b.waitHops(t, vip4, 30*time.Second, nodeV4(0))
	time.Sleep(5 * time.Second) // the wrong key gets several tries
	up, err := b.frr.Established()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(up, []netip.Addr{nodeV4(0)}) {
		t.Fatalf("established peers %v, want only n1 (right password)", up)
	}
	b.waitHops(t, vip4, time.Second, nodeV4(0))
	for i, p := range b.procs[:2] {
		for _, secret := range []string{"s3cret-md5", "wrong-key"} {
			if strings.Contains(p.Output(), secret) {
				t.Errorf("n%d logged the password", i+1)
			}
		}
	}
}

func TestBGPDualStack(t *testing.T) {
	b := newBGPLab(t, 2)
	b.startFRR(t, true, "")
	for i := range 2 {
		b.start(t, i, "NOVAEDGE_CP_VIP_ADDRESS="+vip4.String()+","+vip6.String(),
			"NOVAEDGE_BGP_PEERS="+routerV4.String()+"@65001,["+routerV6.String()+"]@65001")
	}
	b.waitHops(t, vip4, 30*time.Second, nodeV4(0), nodeV4(1))
	figure(t, "IPv6 VIP installed over the IPv6 sessions with both nodes' global next hops", b.waitHops(t, vip6, 30*time.Second, nodeV6(0), nodeV6(1)))
	for _, vip := range []netip.Addr{vip4.Addr(), vip6.Addr()} {
		if who, err := b.client.Whoami(vip, 6443, 3*time.Second); err != nil {
			t.Errorf("client via %s: %v", vip, err)
		} else {
			t.Logf("client via %s answered by %s", vip, who)
		}
	}
}

// birdRouterConfig is the router's bird.conf: AS 65001, n1 and n2 as
// neighbours in AS 65002, routes into the kernel with ECMP; with bfd (a
// "protocol bfd" block) the sessions use BFD.
func birdRouterConfig(bfd string) string {
	bfdOn := ""
	if bfd != "" {
		bfdOn = "  bfd on;\n"
	}
	return `router id 198.51.100.1;
protocol device {}
protocol kernel { ipv4 { export all; }; merge paths on; }
` + bfd + `template bgp node {
  local 198.51.100.1 as 65001;
  hold time 9; connect retry time 1;
` + bfdOn + `  ipv4 { import all; export none; };
}
protocol bgp n1 from node { neighbor 198.51.100.11 as 65002; }
protocol bgp n2 from node { neighbor 198.51.100.12 as 65002; }
`
}

func TestBGPWithBIRD(t *testing.T) {
	b := newBGPLab(t, 2)
	bird, err := b.router.StartBIRD(birdRouterConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	b.start(t, 0)
	b.start(t, 1)
	figure(t, "BIRD installs the VIP with both next hops", b.waitHops(t, vip4, 30*time.Second, nodeV4(0), nodeV4(1)))
	out, err := bird.Birdc("show", "route", "for", "192.0.2.100/32", "all")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("birdc show route:\n%s", out)
	if !strings.Contains(out, "198.51.100.11") || !strings.Contains(out, "198.51.100.12") {
		t.Errorf("BIRD lacks a route from a node:\n%s", out)
	}
	if err := b.apis[1].Set(lab.ServerError); err != nil {
		t.Fatal(err)
	}
	figure(t, "BIRD drops n2's next hop after its apiserver fails", b.waitHops(t, vip4, 10*time.Second, nodeV4(0)))
	if _, err := b.client.Whoami(vip4.Addr(), 6443, 3*time.Second); err != nil {
		t.Errorf("client via BIRD: %v", err)
	}
	if err := b.apis[1].Set(lab.OK); err != nil {
		t.Fatal(err)
	}
	b.waitHops(t, vip4, 10*time.Second, nodeV4(0), nodeV4(1))
	failOpenBGP(t, b, []netip.Addr{nodeV4(0), nodeV4(1)})
}

// failOpenBGP: every node's apiserver fails; the router keeps every node as
// a next hop (all routes equally demoted: fail open) and the client still
// gets through; the first node to recover is then the only next hop.
func failOpenBGP(t *testing.T, b *bgpLab, all []netip.Addr) {
	t.Helper()
	for _, api := range b.apis {
		if err := api.Set(lab.ServerError); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range b.procs {
		waitLine(t, p, 0, "VIP route announced", "demoted=true")
	}
	b.waitHops(t, vip4, 10*time.Second, all...)
	time.Sleep(time.Second)
	b.waitHops(t, vip4, time.Second, all...)
	if _, err := b.client.Whoami(vip4.Addr(), 6443, 3*time.Second); err != nil {
		t.Errorf("client while every apiserver fails: %v", err)
	}
	table, err := b.nodes[0].Exec(binary, "status")
	if err != nil || !strings.Contains(table, "IN FORCE") {
		t.Errorf("status does not say fail open is in force: %v\n%s", err, table)
	}
	if err := b.apis[len(all)-1].Set(lab.OK); err != nil {
		t.Fatal(err)
	}
	figure(t, "every apiserver failed, then the last node's recovered: it is the only next hop after", b.waitHops(t, vip4, 10*time.Second, all[len(all)-1]))
	for _, api := range b.apis {
		if err := api.Set(lab.OK); err != nil {
			t.Fatal(err)
		}
	}
	b.waitHops(t, vip4, 10*time.Second, all...)
}

// TestBGPStrictWithdraws: with fail open off an unhealthy node withdraws
// and removes the VIP, even when it is the only one.
func TestBGPStrictWithdraws(t *testing.T) {
	b := newBGPLab(t, 1)
	b.startFRR(t, false, "")
	b.start(t, 0, "NOVAEDGE_CP_VIP_FAIL_OPEN=false")
	b.waitHops(t, vip4, 30*time.Second, nodeV4(0))
	if err := b.apis[0].Set(lab.ServerError); err != nil {
		t.Fatal(err)
	}
	waitLine(t, b.procs[0], 0, "VIP route withdrawn", "address=192.0.2.100/32")
	waitLine(t, b.procs[0], 0, "Control-plane VIP released", "mode=bgp")
	err := lab.Eventually(10*time.Second, func() error {
		if hops, _ := b.router.KernelNextHops(vip4); len(hops) > 0 {
			return fmt.Errorf("router still routes the VIP via %v", hops)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
