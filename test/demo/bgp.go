package main

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

var routerID = netip.MustParseAddr("198.51.100.1")

// bgpDemo shows BGP mode: three nodes announce the VIP to an FRR router,
// which spreads the client's connections over them (ECMP).
func bgpDemo(w *world, logf func(string, ...any)) error {
	l, err := lab.New(logf)
	if err != nil {
		return err
	}
	defer l.Close()
	router, err := l.AddHost("r", netip.PrefixFrom(routerID, 24), netip.MustParsePrefix("2001:db8:1::1/64"), false)
	if err != nil {
		return err
	}
	var nodes []*lab.Host
	var apis []*lab.APIServer
	var addrs []netip.Addr
	for i := range 3 {
		a := netip.AddrFrom4([4]byte{198, 51, 100, byte(11 + i)})
		h, err := l.AddHost(fmt.Sprintf("n%d", i+1), netip.PrefixFrom(a, 24), netip.Prefix{}, false)
		if err != nil {
			return err
		}
		api, err := h.StartAPIServer(6443)
		if err != nil {
			return err
		}
		if err := h.DefaultRoute(routerID, netip.Addr{}); err != nil {
			return err
		}
		nodes, apis, addrs = append(nodes, h), append(apis, api), append(addrs, a)
	}
	client, err := l.AddBareHost("client")
	if err != nil {
		return err
	}
	if err := l.Link(router, "eth1", []netip.Prefix{netip.MustParsePrefix("203.0.113.1/24")},
		client, "eth0", []netip.Prefix{netip.MustParsePrefix("203.0.113.2/24")}); err != nil {
		return err
	}
	if err := client.DefaultRoute(netip.MustParseAddr("203.0.113.1"), netip.Addr{}); err != nil {
		return err
	}
	if err := router.Router(); err != nil {
		return err
	}
	if _, err := router.StartFRR(lab.FRRConfig{BGP: lab.BGPRouterConfig(routerID, 65002, addrs, "", false)}); err != nil {
		return err
	}
	w.say("BGP mode. New lab: router r (FRR, AS 65001) with n1 n2 n3 (198.51.100.11-13) on one side and a client on the other.")
	var procs []*lab.Process
	for i, n := range nodes {
		p, err := n.Start(n.Name, []string{
			"NOVAEDGE_CP_VIP_MODE=bgp", "NOVAEDGE_CP_VIP_ADDRESS=" + vip4.String(),
			"NOVAEDGE_CP_VIP_HEALTH_INTERVAL=100ms", "NOVAEDGE_CP_VIP_METRICS_ADDR=",
			"NOVAEDGE_CP_VIP_SA_TOKEN_PATH=/nonexistent", "NOVAEDGE_BGP_LOCAL_AS=65002",
			"NOVAEDGE_BGP_ROUTER_ID=" + addrs[i].String(), "NOVAEDGE_BGP_PEER_ADDRESS=" + routerID.String(),
			"NOVAEDGE_BGP_PEER_AS=65001",
		}, w.bin, "run")
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	w.say("novaedge-cpvip started on all three in BGP mode: each binds %s on lo and announces it while its apiserver is healthy.", vip4)
	if err := waitRoute(w, router, "router r installed %s via %s (ECMP)", addrs...); err != nil {
		return err
	}
	spread(w, client)
	time.Sleep(time.Second)

	w.say("n2's kube-apiserver breaks: /livez answers 500.")
	_ = apis[1].Set(lab.ServerError)
	if err := waitRoute(w, router, "n2 demoted its route (fail open: the router uses it only while no node is healthy): %s now via %s", addrs[0], addrs[2]); err != nil {
		return err
	}
	spread(w, client)
	time.Sleep(time.Second)

	w.say("systemctl stop on n3 (SIGTERM).")
	_ = procs[2].Signal(syscall.SIGTERM)
	if err := waitRoute(w, router, "n3 withdrew and closed its session: %s now via %s", addrs[0]); err != nil {
		return err
	}
	code, _ := procs[2].Wait(5 * time.Second)
	w.say("n3 exited with code %d.", code)
	return nil
}

// waitRoute waits until the router's kernel route to the VIP has exactly hops
// as next hops and says msg with the VIP, the hops and the time it took.
func waitRoute(w *world, router *lab.Host, msg string, hops ...netip.Addr) error {
	start := time.Now()
	err := lab.Eventually(30*time.Second, func() error {
		got, err := router.KernelNextHops(vip4)
		if err != nil || !slices.Equal(got, hops) {
			return fmt.Errorf("route via %v, want %v (%v)", got, hops, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var hs []string
	for _, h := range hops {
		hs = append(hs, h.String())
	}
	w.say(msg+" (after %s).", vip4, strings.Join(hs, ", "), time.Since(start).Round(time.Millisecond))
	return nil
}

// spread opens 12 connections through the router and says who answered.
func spread(w *world, client *lab.Host) {
	count := map[string]int{}
	for range 12 {
		who, err := client.Whoami(vip4.Addr(), 6443, 2*time.Second)
		if err != nil {
			who = "no answer"
		}
		count[who]++
	}
	var parts []string
	for _, n := range []string{"n1", "n2", "n3", "no answer"} {
		if count[n] > 0 {
			parts = append(parts, fmt.Sprintf("%s x%d", n, count[n]))
		}
	}
	w.say("  client opened 12 connections to https://%s:6443 through the router: %s", vip4.Addr(), strings.Join(parts, ", "))
}
