package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// realGroup is one VIP on the real control plane's three nodes: ours or
// keepalived's, with the client's probe through it.
type realGroup struct {
	tool  string
	vip   netip.Prefix
	probe *lab.Process
}

func (g *realGroup) holder(c *realCluster) (int, error) { return g.holderAmong(c.nodes) }

// holderAmong returns the index of the host whose eth0 holds the group's VIP.
func (g *realGroup) holderAmong(hosts []*lab.Host) (int, error) {
	for i, n := range hosts {
		if _, ok, err := n.Has(g.vip); err != nil {
			return -1, err
		} else if ok {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%s: nobody holds %s", g.tool, g.vip)
}

// settled waits until every apiserver is live and the group's client has
// succeeded for a second.
func (g *realGroup) settled(c *realCluster) error {
	for i := range c.nodes {
		if err := c.cp.WaitLive(i, 2*time.Minute); err != nil {
			return err
		}
	}
	return lab.Eventually(time.Minute, g.clientSettled)
}

// clientSettled is a condition: the group's client has succeeded for the
// last second.
func (g *realGroup) clientSettled() error {
	now := time.Now()
	ss := lab.RecentSamples(g.probe, 300) // a second is about 100 lines
	ok, failed, _ := lab.RequestCounts(ss, now.Add(-time.Second), now)
	if failed > 0 || ok < 20 {
		return fmt.Errorf("%s: %d ok, %d failed in the last second", g.tool, ok, failed)
	}
	return nil
}

// rollingTrials is how many rolling restarts (three handovers each) a
// rolling-restart row makes: a quarter of BENCH_TRIALS, at least one.
func rollingTrials() int { return max(1, benchTrials()/4) }

// kubeadmKeepalived is keepalived as the kubeadm high-availability guide
// configures it (ha-considerations: vrrp_script every 3 s, weight -2, fall
// 10, rise 2, priorities 101 / 100), its check script's curl run directly
// (the guide's script exits non-zero only when curl does), against the
// apiserver itself rather than a local haproxy.
func kubeadmKeepalived(vrid int, vip netip.Prefix, priority int) lab.Keepalived {
	return lab.Keepalived{VRID: vrid, Priority: priority, Advert: "1", VIP: vip.String(), Preempt: true,
		Check:         "/usr/bin/curl --silent --max-time 2 --insecure https://localhost:6443/ -o /dev/null",
		CheckInterval: 3, Weight: -2, Fall: 10, Rise: 2}
}

// BenchmarkRealControlPlane measures, on a real control plane (three nodes,
// each an etcd member and a kube-apiserver v1.34), what a client-go client
// sending a request through the VIP every 10 ms sees, for ours at the
// defaults (VIP 192.0.2.100) and keepalived as the kubeadm guide sets it up
// (192.0.2.101) on the same nodes at the same time:
//
//   - a rolling restart of the three apiservers (SIGTERM with
//     --shutdown-delay-duration=2s, the next when the previous is live):
//     failed requests per rolling restart;
//   - the holder's apiserver SIGKILLed and restarted at once, and restarted
//     a second later (when kubelet's relist notices): client outage;
//   - the holder's apiserver SIGTERMed with no shutdown delay (kubeadm's
//     default) and restarted: client outage;
//   - the holder's etcd stopped (SIGSTOP: its apiserver hangs, as while
//     kubeadm restarts that etcd): the time until the VIP left it, ours
//     only (the guide's keepalived checks GET /, which a hung apiserver
//     answers: it never moves).
func BenchmarkRealControlPlane(b *testing.B) {
	needKeepalived(b)
	vipKA := netip.MustParsePrefix("192.0.2.101/32")
	c := newRealClusterOf(b, 3, []netip.Addr{vip4.Addr(), vipKA.Addr()}, lab.APIServerOptions{ShutdownDelay: 2 * time.Second},
		"NOVAEDGE_CP_VIP_ADDRESS="+vip4.String(), "NOVAEDGE_CP_VIP_VRID=61", "NOVAEDGE_CP_VIP_HEALTH_INTERVAL=1s",
		"NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=3s", "NOVAEDGE_CP_VIP_ADVERT_INTERVAL=1s", "NOVAEDGE_CP_VIP_LOG_LEVEL=info")
	quiet(c.Lab)
	c.startControlPlane(b)
	c.startAll(b)
	for i, n := range c.nodes {
		prio := 100
		if i == 0 {
			prio = 101
		}
		if _, err := n.StartKeepalived(c.dir, kubeadmKeepalived(62, vipKA, prio)); err != nil {
			b.Fatal(err)
		}
	}
	groups := []*realGroup{{tool: toolOurs, vip: vip4}, {tool: toolKeepalived + " (kubeadm guide)", vip: vipKA}}
	for _, g := range groups {
		var err error
		if g.probe, err = c.cp.StartProbe(c.client, "https://"+g.vip.Addr().String()+":6443", 3*time.Hour); err != nil {
			b.Fatal(err)
		}
		if err := g.settled(c); err != nil {
			b.Fatal(err)
		}
	}
	const (
		rowRolling     = "real control plane, rolling restart of 3 apiservers (SIGTERM, shutdown delay 2 s), L2 defaults: failed requests"
		rowRollingAway = "real control plane, rolling restart of 3 apiservers (SIGTERM, shutdown delay 2 s), L2 defaults: failed requests away from a VIP move"
		rowKill        = "real control plane, holder's apiserver SIGKILLed, L2 defaults: client outage"
		rowKill1s      = "real control plane, holder's apiserver SIGKILLed, restarted 1 s later, L2 defaults: client outage"
		rowTerm0       = "real control plane, holder's apiserver SIGTERM without shutdown delay, L2 defaults: client outage"
		rowEtcd        = "real control plane, holder's etcd stopped (its apiserver hangs), L2 defaults: VIP moved"
	)
	b.ResetTimer()
	for range b.N {
		// Rolling restarts: both VIPs see the same restarts.
		failed, away := map[string][]float64{}, []float64{}
		for trial := range rollingTrials() * rowWanted(rowRolling) {
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
				b.Logf("rolling restart %d, %s: %d failed requests", trial+1, g.tool, n)
				if g.tool != toolOurs {
					continue
				}
				if n > 0 { // what failed, for a goal missed in CI
					b.Logf("%s: %s", g.tool, lab.RequestRuns(lab.Samples(g.probe), start, time.Now()))
				}
				moves := boundTimes(c.procs, g.vip, start, time.Now())
				left := failedAwayFrom(lab.Samples(g.probe), moves, start, time.Now())
				away = append(away, float64(left))
				b.Logf("rolling restart %d, %s: %d VIP moves (%s), %d failed requests away from them", trial+1, g.tool, len(moves), moveList(moves, start), left)
			}
		}
		if rowWanted(rowRolling) > 0 {
			recordReal(b, rowRolling, "requests", groups, func(tool string) Figure { return countFigure(failed[tool]) })
			recordReal(b, rowRollingAway, "requests", groups[:1], func(string) Figure { return countFigure(away) })
		}

		c.cp.SetShutdownDelay(0)
		for i := range c.nodes { // the new flag, unmeasured
			if err := c.restartAPIServer(i, syscall.SIGKILL); err != nil {
				b.Fatal(err)
			}
		}
		var timeline []*l2Series
		for _, row := range []struct {
			name  string
			sig   syscall.Signal
			after time.Duration
		}{{rowKill, syscall.SIGKILL, 0}, {rowKill1s, syscall.SIGKILL, time.Second}, {rowTerm0, syscall.SIGTERM, 0}} {
			if rowWanted(row.name) == 0 {
				continue
			}
			series := map[string]*l2Series{}
			for _, g := range groups {
				series[g.tool] = &l2Series{row: row.name, group: failoverGroup{tool: g.tool}}
			}
			for trial := range benchTrials() {
				for _, g := range groups {
					d, probes, fault, err := c.holderTrial(g, row.sig, row.after)
					if err != nil {
						b.Fatalf("%s, %s, trial %d: %v", row.name, g.tool, trial+1, err)
					}
					series[g.tool].keep(d, probes, fault)
					b.Logf("%s, %s, trial %d: outage %s", row.name, g.tool, trial+1, d.Round(time.Millisecond))
				}
			}
			recordReal(b, row.name, "ms", groups, func(tool string) Figure { return durFigure(series[tool].out) })
			for _, g := range groups {
				timeline = append(timeline, series[g.tool].median())
			}
		}
		var moved []time.Duration
		for trial := range benchTrials() * rowWanted(rowEtcd) {
			d, err := c.etcdTrial(groups[0], b.Logf)
			if err != nil {
				b.Fatalf("%s, trial %d: %v", rowEtcd, trial+1, err)
			}
			moved = append(moved, d)
			b.Logf("%s, trial %d: %s", rowEtcd, trial+1, d.Round(time.Millisecond))
		}
		if len(moved) > 0 {
			recordReal(b, rowEtcd, "ms", groups[:1], func(string) Figure { return durFigure(moved) })
		}
		if os.Getenv("BENCH_ROWS") != "" {
			continue // the plot is of a whole run
		}
		if err := writeTimeline(realTimelineFile, "client-go requests through the VIP every 10 ms, real control plane", timeline); err != nil {
			b.Error(err)
		}
	}
}

// rowWanted is 1 when BENCH_ROWS is unset or its regular expression matches
// the row, else 0: one row of a family can be measured again alone.
func rowWanted(row string) int {
	re := os.Getenv("BENCH_ROWS")
	if ok, err := regexp.MatchString(re, row); re != "" && (err != nil || !ok) {
		return 0
	}
	return 1
}

// realTimelineFile is the plot of the real-control-plane rows.
const realTimelineFile = "../../bench/timeline-real.svg"

// restartEach restarts every node's apiserver in turn (SIGTERM), the next
// when the previous is live: a rolling restart.
func (c *realCluster) restartEach() error {
	for i := range c.nodes {
		if err := c.restartAPIServer(i, syscall.SIGTERM); err != nil {
			return err
		}
	}
	return nil
}

// failedSince waits until the group has settled and returns how many of
// its client's requests failed since start.
func (g *realGroup) failedSince(c *realCluster, start time.Time) (int, error) {
	if err := g.settled(c); err != nil {
		return 0, err
	}
	_, n, _ := lab.RequestCounts(lab.Samples(g.probe), start, time.Now())
	return n, nil
}

// restartAPIServer ends node i's apiserver with sig, waits for it to exit,
// starts it again at once (as kubelet restarts a static pod) and waits until
// it is live.
func (c *realCluster) restartAPIServer(i int, sig syscall.Signal) error {
	return c.restartAPIServerAfter(i, sig, 0)
}

// restartAPIServerAfter is restartAPIServer with the new process started
// after (from the signal on) at the earliest: kubelet notices a dead
// container at its next relist, about a second later.
func (c *realCluster) restartAPIServerAfter(i int, sig syscall.Signal, after time.Duration) error {
	sent := time.Now()
	if err := c.cp.SignalAPIServer(i, sig); err != nil {
		return err
	}
	if _, err := c.cp.APIServer(i).Wait(time.Minute); err != nil {
		return err
	}
	time.Sleep(time.Until(sent.Add(after)))
	if err := c.cp.StartAPIServer(i); err != nil {
		return err
	}
	return c.cp.WaitLive(i, 2*time.Minute)
}

// holderTrial restarts the apiserver of the group's holder with sig (the new
// process after after) and returns the outage its client saw, its requests
// as probes and the fault's time.
func (c *realCluster) holderTrial(g *realGroup, sig syscall.Signal, after time.Duration) (time.Duration, []probe, time.Time, error) {
	h, err := g.holder(c)
	if err != nil {
		return 0, nil, time.Time{}, err
	}
	fault := time.Now()
	if err := c.restartAPIServerAfter(h, sig, after); err != nil {
		return 0, nil, time.Time{}, err
	}
	if err := g.settled(c); err != nil {
		return 0, nil, time.Time{}, err
	}
	var probes []probe
	ss := lab.Samples(g.probe)
	for _, s := range ss {
		if !s.At.Before(fault.Add(-time.Second)) {
			probes = append(probes, probe{at: s.At, ok: s.OK})
		}
	}
	return lab.FailedSpan(ss, fault, time.Now()), probes, fault, nil
}

// etcdTrial stops the etcd member of the group's holder (SIGSTOP) and
// returns the time until another node held the VIP (its addresses read
// every 20 ms: the figure is up to that late);
// then it lets etcd run again and waits until all is settled.
func (c *realCluster) etcdTrial(g *realGroup, logf func(string, ...any)) (time.Duration, error) {
	h, err := g.holder(c)
	if err != nil {
		return 0, err
	}
	fault := time.Now()
	if err := c.cp.SignalEtcd(h, syscall.SIGSTOP); err != nil {
		return 0, err
	}
	var moved time.Duration
	err = lab.Eventually(30*time.Second, func() error {
		if now, err := g.holder(c); err != nil || now == h {
			return fmt.Errorf("%s still holds %s (%v)", c.nodes[h].Name, g.vip, err)
		}
		moved = time.Since(fault)
		return nil
	})
	// What the holder's checks saw meanwhile (hung, and of etcd).
	for _, l := range c.procs[h].LinesBetween(fault, time.Now()) {
		if strings.Contains(l, `msg="Health check failed"`) || strings.Contains(l, "not a hung apiserver") {
			logf("%s: %s", c.nodes[h].Name, l)
		}
	}
	if cerr := c.cp.SignalEtcd(h, syscall.SIGCONT); cerr != nil {
		return 0, cerr
	}
	if err != nil {
		return 0, err
	}
	return moved, g.settled(c)
}

// recordReal records one row with ours and keepalived's figures.
func recordReal(b *testing.B, name, unit string, groups []*realGroup, fig func(tool string) Figure) {
	r := Row{Name: name, Unit: unit, Ours: fig(groups[0].tool)}
	for _, g := range groups[1:] {
		r.Others = append(r.Others, Compared{Tool: g.tool, Figure: fig(g.tool)})
	}
	b.Logf("%s: ours %+v, others %+v", name, r.Ours, r.Others)
	record(b, r)
}

// countFigure summarises counts: median and 95th percentile (nearest rank).
func countFigure(xs []float64) Figure {
	if len(xs) == 0 {
		return Figure{}
	}
	s := sorted(xs)
	return Figure{Median: nearestRank(s, 0.5), P95: nearestRank(s, 0.95), N: len(s)}
}

// BenchmarkRealBGPRollingRestart: the rolling-restart row in BGP mode with
// BFD (300 ms × 3, the defaults): three nodes with real apiservers
// (--shutdown-delay-duration=2s) announce the VIP to an FRR router with
// ECMP; the client behind the router counts failed requests.
func BenchmarkRealBGPRollingRestart(b *testing.B) {
	bin := realBinaries(b)
	l := newBGPLabOf(b, 3, false)
	quiet(l.Lab)
	cp, err := lab.NewControlPlane(l.Lab, bin, l.nodes, []netip.Addr{vip4.Addr()}, lab.APIServerOptions{ShutdownDelay: 2 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	c := &realCluster{cluster: &cluster{Lab: l.Lab, nodes: l.nodes}, cp: cp}
	c.startControlPlane(b)
	l.startFRRWithBFDAt(b, 300)
	for i := range l.nodes {
		l.start(b, i, "NOVAEDGE_CP_VIP_METRICS_ADDR=", "NOVAEDGE_BFD_ENABLED=true",
			"NOVAEDGE_CP_VIP_HEALTH_INTERVAL=1s", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=3s")
	}
	all := []netip.Addr{nodeV4(0), nodeV4(1), nodeV4(2)}
	l.waitHops(b, vip4, time.Minute, all...)
	g := &realGroup{tool: toolOurs, vip: vip4}
	if g.probe, err = cp.StartProbe(l.client, realServer, 3*time.Hour); err != nil {
		b.Fatal(err)
	}
	if err := g.settled(c); err != nil {
		b.Fatal(err)
	}
	const row = "real control plane, rolling restart of 3 apiservers (SIGTERM, shutdown delay 2 s), BGP + BFD 300 ms x 3: failed requests"
	b.ResetTimer()
	for range b.N {
		var failed []float64
		for trial := range rollingTrials() {
			start := time.Now()
			for i := range l.nodes {
				if err := c.restartAPIServer(i, syscall.SIGTERM); err != nil {
					b.Fatal(err)
				}
				l.waitHops(b, vip4, time.Minute, all...)
			}
			n, err := g.failedSince(c, start)
			if err != nil {
				b.Fatal(err)
			}
			failed = append(failed, float64(n))
			b.Logf("BGP rolling restart %d: %d failed requests", trial+1, n)
		}
		recordReal(b, row, "requests", []*realGroup{g}, func(string) Figure { return countFigure(failed) })
	}
}
