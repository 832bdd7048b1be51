package e2e

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// BenchmarkRealSpread: what spreading API connections (issue 36) costs and
// gives, on the real control plane (3 × kube-apiserver + etcd, kubeadm's
// defaults: no shutdown delay). Two groups of ours on the same nodes at
// once: the VIP with spreading on (192.0.2.100) and one without
// (192.0.2.101, its own VRID), each with a client probing it every 10 ms.
//
//   - latency of a GET through the spreading VIP, on a kept connection
//     (client-go's way: the proxy's copy alone) and on a new TCP+TLS
//     connection each (the proxy's accept and dial in every one), against
//     the holder's apiserver directly: p50, p95, p99;
//   - a 50 MB LIST (500 ConfigMaps of 100 kB) through the spreading VIP
//     against the holder's apiserver directly: time, and the holder's
//     daemon's CPU per GB carried;
//   - a rolling restart of the three apiservers (SIGTERM, the next when
//     the previous is live): failed requests, spreading on and off;
//   - our daemon SIGKILLed on the holder and restarted 1.5 s later:
//     failed requests, spreading on and off.
//
// A third group on the same nodes is keepalived + haproxy as the kubeadm
// HA guide configures them (192.0.2.102:8443, bench_haproxy_test.go): it
// is in every row, its haproxy SIGKILLed in the last. kube-vip's
// lb_enable is not: it is IPVS, which this kernel lacks (docs/benchmarks.md).
func BenchmarkRealSpread(b *testing.B) {
	vipOff := netip.MustParsePrefix("192.0.2.101/32")
	vipHA := netip.MustParsePrefix("192.0.2.102/32")
	c := newRealClusterOf(b, 3, []netip.Addr{vip4.Addr(), vipOff.Addr(), vipHA.Addr()}, lab.APIServerOptions{},
		"NOVAEDGE_CP_VIP_ADDRESS="+vip4.String(), "NOVAEDGE_CP_VIP_VRID=71", "NOVAEDGE_CP_VIP_LOG_LEVEL=info")
	c.extra = append(c.extra, spreadEnv(c)...)
	quiet(c.Lab)
	c.startControlPlane(b)
	c.startAll(b)
	offProcs := make([]*lab.Process, len(c.nodes))
	startOff := func(i int) error { // the group without spreading
		env := append(c.nodeEnv(i), "NOVAEDGE_CP_VIP_ADDRESS="+vipOff.String(), "NOVAEDGE_CP_VIP_VRID=72", "NOVAEDGE_CP_VIP_SPREAD=false")
		p, err := c.nodes[i].StartQuiet(c.nodes[i].Name+"-off", env, binary, "run")
		if err == nil {
			offProcs[i] = p // the lab ends it with the others
		}
		return err
	}
	for i := range c.nodes {
		if err := startOff(i); err != nil {
			b.Fatal(err)
		}
	}
	ha := c.startHAProxyGroup(b, vipHA, 73)
	on := &realGroup{tool: "spreading on", vip: vip4}
	off := &realGroup{tool: "spreading off", vip: vipOff}
	groups := []*realGroup{on, off, ha.realGroup}
	for _, g := range groups {
		server := "https://" + g.vip.Addr().String() + ":6443"
		if g == ha.realGroup {
			server = ha.server()
		}
		var err error
		if g.probe, err = c.cp.StartProbe(c.client, server, 3*time.Hour); err != nil {
			b.Fatal(err)
		}
		if err := g.settled(c); err != nil {
			b.Fatal(err)
		}
	}
	h, err := on.holder(c)
	if err != nil {
		b.Fatal(err)
	}
	waitLine(b, c.procs[h], 0, "Spreading new connections to the VIP over the apiservers", "backends=3")
	for i := range c.nodes {
		if i != h {
			waitLine(b, c.procs[h], 0, "Backend health changed", "backend="+c.nodes[i].IPv4.Addr().String(), "state=healthy")
		}
	}
	apiserver := func(i int) string { return "https://" + c.nodes[i%len(c.nodes)].IPv4.Addr().String() + ":6443" }
	b.Logf("the holder is %s; etcd's leader is %s", c.nodes[h].Name, c.etcdLeader())
	const (
		rowLatency      = "real control plane, spreading on: GET through the VIP on a kept connection: latency"
		rowLatencyNew   = "real control plane, spreading on: GET through the VIP, a new connection each: latency"
		rowList         = "real control plane, spreading on: a 50 MB LIST through the VIP: time"
		rowListCPU      = "real control plane, spreading on: the holder's daemon's CPU per GB through the VIP"
		rowRolling      = "real control plane, spreading on: rolling restart of 3 apiservers (SIGTERM, no shutdown delay): failed requests"
		rowKill         = "real control plane, spreading on: our daemon SIGKILLed on the holder, restarted 1.5 s later: failed requests"
		rowRollingDelay = "real control plane, spreading on: rolling restart of 3 apiservers (SIGTERM, shutdown delay 2 s): failed requests"
		// The same trials' failures that no move of the VIP explains.
		rowRollingDelayAway = "real control plane, spreading on: rolling restart of 3 apiservers (SIGTERM, shutdown delay 2 s): failed requests away from a VIP move"
		viaDirect           = "the holder's apiserver directly"
		viaRemote           = "a remote apiserver directly"
		viaRemote2          = "the other remote apiserver directly"
		viaAll              = "the three apiservers directly, a third each"
	)
	// Two connections in three through the spreading VIP go to a remote
	// apiserver, so the VIP's figure is a mix; what the proxy itself adds
	// is the VIP against the same mix of the three directly.
	targets := []struct{ name, server string }{{on.tool, realServer}, {viaDirect, apiserver(h)},
		{viaRemote, apiserver(h + 1)}, {viaRemote2, apiserver(h + 2)}, {ha.tool, ha.server()}}
	b.ResetTimer()
	for range b.N {
		for _, lr := range []struct {
			row  string
			keep []string
		}{{rowLatency, []string{"-keep"}}, {rowLatencyNew, nil}} {
			if rowWanted(lr.row) == 0 {
				continue
			}
			// One client, one request at a time, a second per trial, in
			// five rounds that alternate the two targets (the machine's
			// load drifts); with -keep each round is a connection of its
			// own, so the spreading VIP's rounds meet local and remote
			// backends as new connections do.
			d := time.Duration(benchTrials()) * time.Second / 5
			lat := map[string][]time.Duration{}
			for range 5 {
				for _, to := range targets {
					for _, s := range c.probesOf(b, to.server, 1, d, 20*time.Millisecond, lr.keep...)[0] {
						if s.OK {
							lat[to.name] = append(lat[to.name], s.Latency)
						}
					}
				}
			}
			lat[viaAll] = append(append(append([]time.Duration{}, lat[viaDirect]...), lat[viaRemote]...), lat[viaRemote2]...)
			for _, to := range append(targets, struct{ name, server string }{name: viaAll}) {
				b.Logf("FIGURE %s, %s: %s", lr.row, to.name, quantiles(lat[to.name]))
			}
			r := Row{Name: lr.row, Unit: "ms", Ours: usFigure(lat[on.tool])}
			for _, to := range []string{viaDirect, viaAll, viaRemote, viaRemote2, ha.tool} {
				r.Others = append(r.Others, Compared{Tool: to, Figure: usFigure(lat[to])})
			}
			record(b, r)
		}
		if rowWanted(rowList)+rowWanted(rowListCPU) > 0 {
			if err := c.seedConfigMaps("spread", 500); err != nil {
				b.Fatal(err)
			}
			// What the daemon spends meanwhile on the rest (the probe's
			// connections through the proxy every 10 ms, checks, VRRP),
			// measured over 2 s without a LIST, is taken off.
			idle0, _, _ := usage(b, []int{c.procs[h].PID()})
			time.Sleep(2 * time.Second)
			idle1, _, _ := usage(b, []int{c.procs[h].PID()})
			idlePerSec := float64(idle1-idle0) / 2
			took := map[string][]time.Duration{}
			var bytes, ticks int
			var listed time.Duration
			// At least five LISTs a target, so that the figure is a true
			// median: a single LIST varies by a third, and of two (CI's
			// 2-trial run) the figure was the faster, which crossed the CI
			// bound on noise alone (through the VIP 1025 ms against 677 and
			// 640 directly at the end of a loaded run; 789 and 961 in two
			// runs on a quiet machine).
			for range max(benchTrials()/4, 5) {
				for _, to := range targets {
					t0, _, _ := usage(b, []int{c.procs[h].PID()})
					d, n, err := c.list(to.server + "/api/v1/configmaps")
					if err != nil {
						b.Fatal(err)
					}
					t1, _, _ := usage(b, []int{c.procs[h].PID()})
					took[to.name] = append(took[to.name], d)
					if to.name == on.tool {
						bytes, ticks, listed = bytes+n, ticks+t1-t0, listed+d
					}
					b.Logf("LIST %s: %d bytes in %s", to.name, n, d.Round(time.Millisecond))
				}
			}
			// clock ticks (1/100 s) per GB, as CPU milliseconds, less the rest
			cpu := max(float64(ticks)-idlePerSec*listed.Seconds(), 0) * 10 / (float64(bytes) / 1e9)
			b.Logf("FIGURE spread LIST: through the VIP %+v ms, the holder's directly %+v ms, a remote one directly %+v ms (%d MB each); the holder's daemon %.0f CPU ms per GB",
				durFigure(took[on.tool]), durFigure(took[viaDirect]), durFigure(took[viaRemote]), bytes/len(took[on.tool])/1e6, cpu)
			// Through the VIP a LIST lands on any of the three, so what it
			// is compared with is the three directly, a third each (CI: the
			// VIP's LIST went to a remote apiserver, 1.56 s, while the
			// holder's own answered in 1.01 s and the remotes in 1.49 and
			// 1.79: the backend's speed, not the proxy's cost).
			took[viaAll] = slices.Concat(took[viaDirect], took[viaRemote], took[viaRemote2])
			r := Row{Name: rowList, Unit: "ms", Ours: durFigure(took[on.tool])}
			for _, to := range append(targets[1:], struct{ name, server string }{name: viaAll}) {
				r.Others = append(r.Others, Compared{Tool: to.name, Figure: durFigure(took[to.name])})
			}
			record(b, r)
			record(b, Row{Name: rowListCPU, Unit: "ms", Ours: Figure{Median: cpu, P95: cpu, N: len(took[on.tool])}})
		}
		// A rolling restart of the three apiservers, each group's failed
		// requests over it. With the shutdown delay the VIP follows each
		// drain, so a restart in node order moves it up to three times, and
		// a connection being opened at a move is reset (its handshake with
		// the old holder, its next packet at the new one, whose kernel
		// knows no such connection), spreading or not; excess is then the
		// row of the failures that no move explains, ours and spreading
		// off's (keepalived's moves are not read).
		rolling := func(row, excess string) {
			failed, unexplained := map[string][]float64{}, map[string][]float64{}
			for trial := range rollingTrials() * rowWanted(row) {
				start := time.Now()
				if err := c.restartEach(); err != nil {
					b.Fatal(err)
				}
				for _, g := range groups {
					n, err := g.failedSince(c, start)
					if err != nil {
						b.Fatal(err)
					}
					failed[g.tool] = append(failed[g.tool], float64(n))
					b.Logf("%s %d, %s: %d failed requests", row, trial+1, g.tool, n)
					if n > 0 { // what failed, for a goal missed in CI
						b.Logf("%s: %s", g.tool, lab.RequestRuns(lab.Samples(g.probe), start, time.Now()))
					}
					procs := map[*realGroup][]*lab.Process{on: c.procs, off: offProcs}[g]
					if excess == "" || procs == nil {
						continue
					}
					moves := boundTimes(procs, g.vip, start, time.Now())
					left := failedAwayFrom(lab.Samples(g.probe), moves, start, time.Now())
					unexplained[g.tool] = append(unexplained[g.tool], float64(left))
					b.Logf("%s %d, %s: %d VIP moves, %d failed requests away from them", row, trial+1, g.tool, len(moves), left)
				}
			}
			if rowWanted(row) > 0 {
				recordReal(b, row, "requests", groups, func(tool string) Figure { return countFigure(failed[tool]) })
			}
			if excess != "" && rowWanted(row) > 0 {
				recordReal(b, excess, "requests", []*realGroup{on, off}, func(tool string) Figure { return countFigure(unexplained[tool]) })
			}
		}
		rolling(rowRolling, "")
		// Our daemon SIGKILLed on its group's holder and started again
		// 1.5 s later (systemd's or the kubelet's restart): the VIP stays;
		// with spreading the requests in flight through the proxy are cut
		// with it. keepalived + haproxy: the proxy, haproxy, SIGKILLed on
		// keepalived's holder the same way.
		killed := map[string][]float64{}
		for trial := range rollingTrials() * rowWanted(rowKill) {
			for _, g := range groups {
				h, err := g.holder(c)
				if err != nil {
					b.Fatal(err)
				}
				procs, restart := c.procs, c.restart
				switch g {
				case off:
					procs, restart = offProcs, startOff
				case ha.realGroup:
					procs, restart = ha.procs, func(i int) error { return ha.start(c, i) }
				}
				start := time.Now()
				procs[h].Kill()
				time.Sleep(1500 * time.Millisecond)
				if err := restart(h); err != nil {
					b.Fatal(err)
				}
				time.Sleep(3 * time.Second) // the restarted daemon resumes
				n, err := g.failedSince(c, start)
				if err != nil {
					b.Fatal(err)
				}
				killed[g.tool] = append(killed[g.tool], float64(n))
				b.Logf("our SIGKILL %d, %s: %d failed requests", trial+1, g.tool, n)
			}
		}
		if rowWanted(rowKill) > 0 {
			recordReal(b, rowKill, "requests", groups, func(tool string) Figure { return countFigure(killed[tool]) })
		}
		// The same with --shutdown-delay-duration=2s (issue 36: 0-1 failed
		// without spreading): an apiserver takes the flag at its next start,
		// so one pass unmeasured first; last, since the flag stays.
		if rowWanted(rowRollingDelay) > 0 {
			c.cp.SetShutdownDelay(2 * time.Second)
			for i := range c.nodes {
				if err := c.restartAPIServer(i, syscall.SIGKILL); err != nil {
					b.Fatal(err)
				}
			}
			for _, g := range groups {
				if err := g.settled(c); err != nil {
					b.Fatal(err)
				}
			}
			rolling(rowRollingDelay, rowRollingDelayAway)
		}
	}
}

// moveReach is how far from a move of the VIP a failed request is put down
// to it: its connection's handshake went to the old holder up to the
// client's time-out before (a SYN the old holder no longer answers for is
// lost, and the client's 1 s time-out ends the request first), and the
// new holder's gratuitous ARP follows its bind by a few milliseconds.
const moveReach = 1100 * time.Millisecond

// boundTimes returns when the daemons procs bound vip in [from, to] (their
// "Control-plane VIP bound" lines, by the line's time= field): the moves.
func boundTimes(procs []*lab.Process, vip netip.Prefix, from, to time.Time) []time.Time {
	var out []time.Time
	for _, p := range procs {
		for _, l := range p.LinesBetween(from, to) {
			if !strings.Contains(l, "Control-plane VIP bound") || !strings.Contains(l, "address="+vip.String()) {
				continue
			}
			f := strings.Fields(l)
			if len(f) > 0 {
				if at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(f[0], "time=")); err == nil {
					out = append(out, at)
				}
			}
		}
	}
	return out
}

// moveList is the moves' times after from, for a log line.
func moveList(moves []time.Time, from time.Time) string {
	var out []string
	for _, m := range moves {
		out = append(out, "+"+m.Sub(from).Round(time.Millisecond).String())
	}
	return strings.Join(out, " ")
}

// failedAwayFrom counts the requests sent in [from, to) that failed with
// no move within moveReach before their end or 100 ms after.
func failedAwayFrom(ss []lab.Sample, moves []time.Time, from, to time.Time) int {
	n := 0
	for _, s := range ss {
		if s.OK || s.At.Before(from) || !s.At.Before(to) {
			continue
		}
		near := slices.ContainsFunc(moves, func(m time.Time) bool {
			return !m.Before(s.Done().Add(-moveReach)) && !m.After(s.Done().Add(100*time.Millisecond))
		})
		if !near {
			n++
		}
	}
	return n
}

// usFigure summarises durations in milliseconds to the microsecond (a
// proxy's cost is a fraction of a millisecond).
func usFigure(ds []time.Duration) Figure {
	if len(ds) == 0 {
		return Figure{}
	}
	s := sorted(ds)
	ms := func(q float64) float64 { return float64(nearestRank(s, q).Microseconds()) / 1000 }
	return Figure{Median: ms(0.5), P95: ms(0.95), N: len(s)}
}

// quantiles says p50, p95 and p99 of ds.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	s := sorted(ds)
	return fmt.Sprintf("p50 %v, p95 %v, p99 %v (%d requests)", nearestRank(s, 0.5), nearestRank(s, 0.95), nearestRank(s, 0.99), len(s))
}

// list GETs url from the client with curl and returns how long it took and
// how many bytes came.
func (c *realCluster) list(url string) (time.Duration, int, error) {
	out, err := c.client.Exec("curl", "-sf", "--max-time", "60", "--cacert", c.cp.PKI.CAFile,
		"-H", "Authorization: Bearer "+c.cp.AdminToken, "-o", "/dev/null", "-w", "%{time_total} %{size_download}", url)
	if err != nil {
		return 0, 0, fmt.Errorf("LIST %s: %v: %s", url, err, out)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("LIST %s: curl said %q", url, out)
	}
	secs, err1 := strconv.ParseFloat(f[0], 64)
	n, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("LIST %s: curl said %q", url, out)
	}
	return time.Duration(secs * float64(time.Second)), n, nil
}
