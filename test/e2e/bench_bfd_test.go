package e2e

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// bfdSubject is one BFD speaker peering the router: ours, GoBGP's own BFD
// (the gobgpbfd helper) or FRR's bfdd, at one interval.
type bfdSubject struct {
	tool   string
	ms     int
	addr   netip.Addr   // its address, the router's BGP and BFD peer
	vip    netip.Prefix // the route it announces
	freeze *lab.Process // the process a trial stops
}

const (
	toolOurs  = "novaedge-cpvip"
	toolGoBGP = "GoBGP v4.8.0 BFD"
	toolFRR   = "FRR bfdd to bfdd"
)

// BenchmarkBFDDetection measures, for a node going silent (SIGSTOP), the time
// until the router's FRR bfdd declares the session down and until the route
// leaves the router's kernel: our node, a GoBGP speaker with GoBGP's own BFD
// and an FRR node (bgpd + bfdd), at 50 ms x 3 and at 10 ms x 3, all six
// peering one FRR router. Each round freezes every subject in turn (order
// rotating) and measures it alone, then resumes them all and waits until
// every session and route is back.
func BenchmarkBFDDetection(b *testing.B) {
	l, subjects := newBFDBenchLab(b)
	router := l.frr.Daemon("bfdd")
	watch := map[netip.Prefix]*lab.RouteWatch{}
	for _, s := range subjects {
		w, err := l.router.WatchRoute(s.vip)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		watch[s.vip] = w
	}
	settle := func() {
		for _, s := range subjects {
			l.waitBFDInterval(b, s.addr, s.ms, 60*time.Second)
			l.waitHops(b, s.vip, 60*time.Second, s.addr)
		}
		time.Sleep(time.Second) // past FRR bgpd's re-registration of the session after Established
		for _, s := range subjects {
			l.waitBFDInterval(b, s.addr, s.ms, 60*time.Second)
		}
	}
	settle()
	type result struct{ down, route []time.Duration }
	results := map[bfdSubject]*result{}
	for _, s := range subjects {
		results[s] = &result{}
	}
	trials := benchTrials()
	b.ResetTimer()
	for range b.N {
		for round := range trials {
			start := time.Now()
			for k := range subjects {
				s := subjects[(round+k)%len(subjects)]
				skip := router.Lines()
				t0 := time.Now()
				if err := s.freeze.Signal(syscall.SIGSTOP); err != nil {
					b.Fatal(err)
				}
				i, err := router.WaitLine(10*time.Second, skip, "state-change", "peer:"+s.addr.String()+" ", "up -> down")
				if err != nil {
					// What the router's bfdd said of that peer since the
					// freeze, and the session as it sees it now.
					var said []string
					for n, line := range strings.Split(router.Output(), "\n") {
						if n >= skip && strings.Contains(line, "peer:"+s.addr.String()+" ") {
							said = append(said, line)
						}
					}
					peers, perr := l.frr.BFDPeers()
					b.Fatalf("%s %d ms: %v\nthe session now: %+v (%v)\nrouter's bfdd on %s since the freeze:\n%s",
						s.tool, s.ms, err, peers[s.addr.String()], perr, s.addr, strings.Join(said, "\n"))
				}
				downAt, err := frrLogTime(router.Line(i))
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
				r := results[s]
				r.down, r.route = append(r.down, downAt.Sub(t0)), append(r.route, routeAt.Sub(t0))
				b.Logf("round %d %2d ms %-17s down %s route %s", round+1, s.ms, s.tool,
					downAt.Sub(t0).Round(time.Millisecond), routeAt.Sub(t0).Round(time.Millisecond))
			}
			for _, s := range subjects {
				if err := s.freeze.Signal(syscall.SIGCONT); err != nil {
					b.Fatal(err)
				}
			}
			settle()
			b.Logf("round %d took %s", round+1, time.Since(start).Round(time.Millisecond))
		}
	}
	b.StopTimer()
	for _, ms := range []int{50, 10} {
		var ours [2]Figure
		var others [2][]Compared
		for _, s := range subjects {
			if s.ms != ms {
				continue
			}
			r := results[s]
			f := [2]Figure{durFigure(r.down), durFigure(r.route)}
			b.Logf("BFD %d ms x 3, %s: down %+v, route %+v", ms, s.tool, f[0], f[1])
			for i := range f {
				if s.tool == toolOurs {
					ours[i] = f[i]
				} else {
					others[i] = append(others[i], Compared{Tool: s.tool, Figure: f[i]})
				}
			}
		}
		for i, what := range []string{"FRR declares Down", "route leaves the router's kernel"} {
			record(b, Row{Name: fmt.Sprintf("BGP+BFD %dms x 3, node frozen: %s", ms, what), Unit: "ms", Ours: ours[i], Others: others[i]})
		}
	}
}

// newBFDBenchLab is one FRR router (bgpd + bfdd, profiles fast50 and fast10)
// and six BGP speakers with BFD: for each interval our node, a gobgpbfd
// helper and an FRR node, each announcing its own /32.
func newBFDBenchLab(b *testing.B) (*bgpLab, []bfdSubject) {
	b.Helper()
	helper := filepath.Join(b.TempDir(), "gobgpbfd")
	if out, err := exec.Command("go", "build", "-o", helper, "../tools/gobgpbfd").CombinedOutput(); err != nil {
		b.Fatalf("building gobgpbfd: %v\n%s", err, out)
	}
	l := newBGPLab(b, 2)
	quiet(l.Lab)
	var subjects []bfdSubject
	as := map[netip.Addr]uint32{}
	profile := map[netip.Addr]string{}
	var neighbors []netip.Addr
	for i, ms := range []int{50, 10} {
		for j, tool := range []string{toolOurs, toolGoBGP, toolFRR} {
			s := bfdSubject{tool: tool, ms: ms,
				addr: netip.AddrFrom4([4]byte{198, 51, 100, byte(11 + 10*j + i)}),
				vip:  netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(100 + 10*i + j)}), 32)}
			subjects = append(subjects, s)
			neighbors = append(neighbors, s.addr)
			as[s.addr], profile[s.addr] = uint32(65002+j), fmt.Sprintf("fast%d", ms)
		}
	}
	router, err := l.router.StartFRR(lab.FRRConfig{
		BGP: lab.BGPRouterConfigAS(routerV4, neighbors, as, "", profile),
		BFD: "log timestamp precision 6\ndebug bfd peer\nbfd\n" + lab.BFDProfile("fast50", 50, 3) + lab.BFDProfile("fast10", 10, 3) + "exit\n",
	})
	if err != nil {
		b.Fatal(err)
	}
	l.frr = router
	for k := range subjects {
		s := &subjects[k]
		switch s.tool {
		case toolOurs:
			i := 0 // n1 at 50 ms, n2 at 10 ms
			if s.ms != 50 {
				i = 1
			}
			iv := fmt.Sprintf("%dms", s.ms)
			s.freeze = l.start(b, i, "NOVAEDGE_CP_VIP_ADDRESS="+s.vip.String(), "NOVAEDGE_BGP_LOCAL_AS=65002",
				"NOVAEDGE_BFD_ENABLED=true", "NOVAEDGE_BFD_TX_INTERVAL="+iv, "NOVAEDGE_BFD_RX_INTERVAL="+iv, "NOVAEDGE_BFD_DETECT_MULT=3")
		case toolGoBGP:
			h := bfdBenchHost(b, l, fmt.Sprintf("g%d", s.ms), s.addr)
			if s.freeze, err = h.Start("gobgpbfd", nil, helper, "-as", "65003", "-router-id", s.addr.String(),
				"-peer", routerV4.String(), "-vip", s.vip.String(), "-interval", fmt.Sprintf("%dms", s.ms)); err != nil {
				b.Fatal(err)
			}
		case toolFRR:
			h := bfdBenchHost(b, l, fmt.Sprintf("f%d", s.ms), s.addr)
			f, err := h.StartFRR(lab.FRRConfig{BFD: lab.BFDRouterConfig(s.ms, 3), BGP: frrNodeConfig(s.addr, s.vip)})
			if err != nil {
				b.Fatal(err)
			}
			s.freeze = f.Daemon("bfdd")
		}
	}
	return l, subjects
}

func bfdBenchHost(b *testing.B, l *bgpLab, name string, addr netip.Addr) *lab.Host {
	b.Helper()
	h, err := l.AddHost(name, netip.PrefixFrom(addr, 24), netip.Prefix{}, false)
	if err != nil {
		b.Fatal(err)
	}
	if err := h.DefaultRoute(routerV4, netip.Addr{}); err != nil {
		b.Fatal(err)
	}
	return h
}

// frrNodeConfig is an FRR node's bgpd.conf: AS 65004, the router as its one
// neighbour with BFD (profile fast), announcing vip.
func frrNodeConfig(addr netip.Addr, vip netip.Prefix) string {
	return fmt.Sprintf(`router bgp 65004
 bgp router-id %[1]s
 no bgp ebgp-requires-policy
 no bgp network import-check
 neighbor %[2]s remote-as 65001
 neighbor %[2]s timers 3 9
 neighbor %[2]s timers connect 1
 neighbor %[2]s bfd
 neighbor %[2]s bfd profile fast
 address-family ipv4 unicast
  network %[3]s
  neighbor %[2]s activate
 exit-address-family
`, addr, routerV4, vip)
}

// waitBFDInterval waits until the router's session with peer is up and runs
// at ms both ways.
func (b *bgpLab) waitBFDInterval(t testing.TB, peer netip.Addr, ms int, within time.Duration) {
	t.Helper()
	err := lab.Eventually(within, func() error {
		peers, err := b.frr.BFDPeers()
		if err != nil {
			return err
		}
		p := peers[peer.String()]
		if p.Status != "up" || p.TxInterval != ms || p.RemoteTx != ms || p.RemoteRx != ms {
			return fmt.Errorf("FRR's BFD session with %s: %+v, want up at %d ms", peer, p, ms)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
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
