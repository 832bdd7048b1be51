package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

var (
	frrNodeV4 = netip.MustParseAddr("198.51.100.21")
	frrVIP    = netip.MustParsePrefix("192.0.2.101/32")
)

// BenchmarkBFDDetection measures, for a node going silent (SIGSTOP), the time
// until the router's FRR bfdd declares the session down and until the kernel
// route leaves the router: our node next to an FRR node (bfdd + bgpd) peering
// the same router, trials alternating, at 50 ms x 3 and 10 ms x 3.
func BenchmarkBFDDetection(b *testing.B) {
	for _, ms := range []int{50, 10} {
		b.Run(fmt.Sprintf("%dms_x3", ms), func(b *testing.B) { benchBFD(b, ms) })
	}
}

type bfdTrial struct{ down, route time.Duration }

func benchBFD(b *testing.B, ms int) {
	trials := benchTrials()
	l := newBGPLab(b, 1)
	quiet(l.Lab)
	fnode, err := l.AddHost("f1", netip.PrefixFrom(frrNodeV4, 24), netip.Prefix{}, false)
	if err != nil {
		b.Fatal(err)
	}
	if err := fnode.DefaultRoute(routerV4, netip.Addr{}); err != nil {
		b.Fatal(err)
	}
	neighbors := []netip.Addr{nodeV4(0), frrNodeV4}
	bfdConf := lab.BFDRouterConfig(ms, 3)
	router, err := l.router.StartFRR(lab.FRRConfig{
		BGP: lab.BGPRouterConfigAS(routerV4, neighbors, map[netip.Addr]uint32{nodeV4(0): 65002, frrNodeV4: 65003}, "", true),
		BFD: "log timestamp precision 6\ndebug bfd peer\n" + bfdConf,
	})
	if err != nil {
		b.Fatal(err)
	}
	l.frr = router
	ffrr, err := fnode.StartFRR(lab.FRRConfig{BFD: bfdConf, BGP: `router bgp 65003
 bgp router-id 198.51.100.21
 no bgp ebgp-requires-policy
 no bgp network import-check
 neighbor 198.51.100.1 remote-as 65001
 neighbor 198.51.100.1 timers 3 9
 neighbor 198.51.100.1 timers connect 1
 neighbor 198.51.100.1 bfd
 neighbor 198.51.100.1 bfd profile fast
 address-family ipv4 unicast
  network 192.0.2.101/32
  neighbor 198.51.100.1 activate
 exit-address-family
`})
	if err != nil {
		b.Fatal(err)
	}
	iv := fmt.Sprintf("%dms", ms)
	l.start(b, 0, "NOVAEDGE_BFD_ENABLED=true", "NOVAEDGE_BFD_TX_INTERVAL="+iv, "NOVAEDGE_BFD_RX_INTERVAL="+iv, "NOVAEDGE_BFD_DETECT_MULT=3")
	watch := map[netip.Prefix]*lab.RouteWatch{}
	for _, p := range []netip.Prefix{vip4, frrVIP} {
		w, err := l.router.WatchRoute(p)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		watch[p] = w
	}
	type subject struct {
		name   string
		peer   netip.Addr
		vip    netip.Prefix
		freeze *lab.Process
		hop    netip.Addr
	}
	subjects := []subject{
		{"novaedge-cpvip", nodeV4(0), vip4, l.procs[0], nodeV4(0)},
		{"frr-bfdd", frrNodeV4, frrVIP, ffrr.Daemon("bfdd"), frrNodeV4},
	}
	settle := func(s subject) {
		l.waitBFD(b, s.peer, "up", 60*time.Second)
		l.waitHops(b, s.vip, 60*time.Second, s.hop)
		time.Sleep(time.Second) // past the Poll: running at the fast interval
	}
	for _, s := range subjects {
		settle(s)
	}
	b.ResetTimer()
	results := map[string][]bfdTrial{}
	for range b.N {
		for trial := range trials {
			for _, s := range subjects {
				bfdd := router.Daemon("bfdd")
				skip := bfdd.Lines()
				t0 := time.Now()
				if err := s.freeze.Signal(syscall.SIGSTOP); err != nil {
					b.Fatal(err)
				}
				i, err := bfdd.WaitLine(10*time.Second, skip, "state-change", "peer:"+s.peer.String(), "up -> down")
				if err != nil {
					b.Fatal(err)
				}
				downAt, err := frrLogTime(bfdd.Line(i))
				if err != nil {
					b.Fatal(err)
				}
				var routeAt time.Time
				if err := lab.Eventually(10*time.Second, func() error {
					var ok bool
					if routeAt, ok = watch[s.vip].FirstAfter(t0); !ok {
						return fmt.Errorf("route to %s unchanged", s.vip)
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				r := bfdTrial{down: downAt.Sub(t0), route: routeAt.Sub(t0)}
				results[s.name] = append(results[s.name], r)
				b.Logf("%s trial %d %-15s down %s route %s", iv, trial+1, s.name, r.down.Round(time.Millisecond), r.route.Round(time.Millisecond))
				if err := s.freeze.Signal(syscall.SIGCONT); err != nil {
					b.Fatal(err)
				}
				settle(s)
			}
		}
	}
	b.StopTimer()
	figs := map[string][2]Figure{}
	var summary []string
	for _, s := range subjects {
		var downs, routes []time.Duration
		for _, r := range results[s.name] {
			downs, routes = append(downs, r.down), append(routes, r.route)
		}
		figs[s.name] = [2]Figure{durFigure(downs), durFigure(routes)}
		dm, dp := stats(downs)
		rm, rp := stats(routes)
		summary = append(summary, fmt.Sprintf("%s: down median %s p95 %s, route gone median %s p95 %s", s.name, dm, dp, rm, rp))
		key := strings.ReplaceAll(s.name, "-", "")
		b.ReportMetric(float64(dm.Microseconds())/1000, key+"-down-median-ms")
		b.ReportMetric(float64(rm.Microseconds())/1000, key+"-route-median-ms")
	}
	b.Logf("BFD %s x 3, %d trials each: %s", iv, trials, strings.Join(summary, "; "))
	for i, what := range []string{"FRR declares Down", "route leaves the router's kernel"} {
		other := figs["frr-bfdd"][i]
		record(b, Row{Name: fmt.Sprintf("BGP+BFD %s x 3, node frozen: %s", iv, what), Unit: "ms",
			Ours: figs["novaedge-cpvip"][i], Other: "FRR bfdd to bfdd", OtherFig: &other})
	}
}

// frrLogTime parses the timestamp FRR puts before a log line with
// "log timestamp precision 6": 2026/11/22 05:03:01.123456.
func frrLogTime(line string) (time.Time, error) {
	if len(line) < 26 {
		return time.Time{}, fmt.Errorf("no timestamp in %q", line)
	}
	return time.ParseInLocation("2006/01/02 15:04:05.000000", line[:26], time.Local)
}
