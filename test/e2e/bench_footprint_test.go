package e2e

import (
	"cmp"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// usage is a process tree's CPU time (clock ticks, with its reaped
// children's: keepalived's check scripts), RSS (KiB) and context switches
// (voluntary and not, every thread's: the wake-ups) now.
func usage(t testing.TB, pids []int) (ticks, rssKiB, switches int) {
	t.Helper()
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime: fields 14-17
			v, _ := strconv.Atoi(f[i])
			ticks += v
		}
		rssKiB += statusField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			file := fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name())
			switches += statusField(file, "voluntary_ctxt_switches:") + statusField(file, "nonvoluntary_ctxt_switches:")
		}
	}
	return ticks, rssKiB, switches
}

// statusField returns the number after key in a /proc status file, or 0.
func statusField(file, key string) int {
	status, _ := os.ReadFile(file)
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return 0
}

// children returns pid and its child processes (keepalived forks its VRRP process).
func children(pid int) []int {
	out := []int{pid}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return out
	}
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, children(c)...)
		}
	}
	return out
}

// idleCost is a process tree's cost over a window.
type idleCost struct {
	CPU     float64 // % of one core
	RSS     float64 // MiB at the end
	File    float64 // of which the pages of files (the executable's code): MiB
	Wakeups float64 // context switches a second
}

// footprintOver measures pids over d.
func footprintOver(t testing.TB, pids []int, d time.Duration) idleCost {
	t0, _, s0 := usage(t, pids)
	start := time.Now()
	time.Sleep(d)
	t1, rss, s1 := usage(t, pids)
	file := 0
	for _, pid := range pids {
		file += statusField(fmt.Sprintf("/proc/%d/status", pid), "RssFile:")
	}
	const hz = 100 // USER_HZ on Linux
	secs := time.Since(start).Seconds()
	return idleCost{CPU: float64(t1-t0) / hz / secs * 100, RSS: float64(rss) / 1024, File: float64(file) / 1024, Wakeups: float64(s1-s0) / secs}
}

// idleWindow is BENCH_IDLE_SECONDS (default 60 s), the length of one
// measured window.
func idleWindow() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("BENCH_IDLE_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return time.Minute
}

// idleNote names the windows a row's figure is the median of.
func idleNote(over time.Duration) string {
	return fmt.Sprintf("median of %s windows of %d s", cmp.Or(os.Getenv("BENCH_IDLE_WINDOWS"), "3"), int(over.Seconds()))
}

// idleDefaults is the build's defaults where the e2e cluster's differ
// (its health checks and advertisements every 100 ms), and one VIP.
func idleDefaults(t testing.TB) []string {
	d := daemonDefaults(t)
	return []string{"NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32", "NOVAEDGE_CP_VIP_HEALTH_INTERVAL=" + d.HealthInterval.String(),
		"NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=" + d.HealthTimeout.String(), "NOVAEDGE_CP_VIP_ADVERT_INTERVAL=" + d.AdvertInterval.String()}
}

// BenchmarkIdleL2 measures CPU, RSS and wake-ups over BENCH_IDLE_WINDOWS
// windows (default 3; medians) with one VIP held: ours in L2 with the
// defaults (advert 200 ms, health 1 s) and keepalived (advert 1 s) at the same
// time, each in a lab of its own (neither hears the other's advertisements,
// as in a cluster of one kind), and keepalived as the kubeadm guide deploys
// it for an apiserver (its vrrp_script forks curl every 3 s). With
// BENCH_BINARY_B set, that build of ours runs in a fourth lab (an A/B pair
// in the same windows; logged, not recorded).
func BenchmarkIdleL2(b *testing.B) {
	needKeepalived(b)
	over := idleWindow()
	ours := func(bin string, env ...string) *cluster {
		c := newCluster(b, 1, append(idleDefaults(b), env...)...)
		quiet(c.Lab)
		c.bin = bin
		c.startAll(b)
		return c
	}
	// BENCH_IDLE_ENV: settings of our labs (space-separated VAR=value), to
	// measure a candidate before it is the default.
	c := ours(binary, strings.Fields(os.Getenv("BENCH_IDLE_ENV"))...)
	// A group of three at the defaults: a backup's cost is the
	// advertisements it receives, the master's those it sends.
	g := newCluster(b, 3, append(idleDefaults(b), strings.Fields(os.Getenv("BENCH_IDLE_ENV"))...)...)
	quiet(g.Lab)
	g.startAll(b)
	k := newCluster(b, 0)
	quiet(k.Lab)
	_, kp := k.addKeepalived(b, "ka", lab.Keepalived{VRID: 51, Priority: 100, Advert: "1", VIP: vip4.String()})
	ks := newCluster(b, 0)
	quiet(ks.Lab)
	_, ksp := ks.addKeepalived(b, "ks", kubeadmKeepalived(51, vip4, 100))
	labs, names := []*cluster{c, k, ks}, []string{"novaedge-cpvip L2", "keepalived L2", "keepalived L2, kubeadm script"}
	if other := os.Getenv("BENCH_BINARY_B"); other != "" {
		// BENCH_ENV_B: settings of the B lab (space-separated VAR=value,
		// after the defaults above): a candidate setting against the same
		// build.
		labs, names = append(labs, ours(other, strings.Fields(os.Getenv("BENCH_ENV_B"))...)), append(names, "novaedge-cpvip B build")
	}
	for _, cl := range append(labs, g) {
		cl.waitHolder(b, vip4, -1, 30*time.Second)
	}
	time.Sleep(5 * time.Second) // settled: past start-up work; keepalived has forked its children
	gh, _ := g.waitHolder(b, vip4, -1, time.Second)
	backup := (gh + 1) % 3
	trees := [][]int{{c.procs[0].PID()}, children(kp.PID()), children(ksp.PID()), {g.procs[gh].PID()}, {g.procs[backup].PID()}}
	if len(labs) > 3 {
		trees = append(trees, []int{labs[3].procs[0].PID()})
	}
	names = append(names[:3], append([]string{"novaedge-cpvip L2, master of 3", "novaedge-cpvip L2, backup of 3"}, names[3:]...)...)
	b.ResetTimer()
	got := measureWindows(b, over, trees...)
	b.StopTimer()
	for i, name := range names {
		b.Logf("%-30s CPU %.3f %% of a core, RSS %.1f MiB, %.1f wake-ups/s", name, got[i].CPU, got[i].RSS, got[i].Wakeups)
	}
	fig := func(v float64) Figure { return Figure{Median: v, N: 1} }
	record(b, Row{Name: "idle CPU, one VIP held, L2", Unit: "%", Ours: fig(got[0].CPU),
		Others: []Compared{{Tool: "keepalived 2.2.7", Figure: fig(got[1].CPU)},
			{Tool: "keepalived 2.2.7 (kubeadm guide's check script)", Figure: fig(got[2].CPU)}}, Note: idleNote(over)})
	record(b, Row{Name: "idle RSS, one VIP held, L2", Unit: "MiB", Ours: fig(got[0].RSS),
		Others: versus("keepalived 2.2.7", fig(got[1].RSS)),
		Note:   fmt.Sprintf("pages of files, the executable's code and libraries: ours %.1f MiB, keepalived's %.1f MiB", got[0].File, got[1].File)})
	record(b, Row{Name: "idle wake-ups/s, one VIP held, L2", Unit: "/s", Ours: fig(got[0].Wakeups),
		Others: []Compared{{Tool: "keepalived 2.2.7", Figure: fig(got[1].Wakeups)},
			{Tool: "keepalived 2.2.7 (kubeadm guide's check script)", Figure: fig(got[2].Wakeups)}}, Note: idleNote(over)})
	record(b, Row{Name: "idle wake-ups/s, a backup of three, L2", Unit: "/s", Ours: fig(got[4].Wakeups),
		Note: fmt.Sprintf("%s; its master %.1f/s", idleNote(over), got[3].Wakeups)})
}

// BenchmarkIdleBGP measures, side by side over the same windows, ours in BGP
// mode with BFD at 50 ms x 3 (health check at its default) and an FRR node
// (bgpd and bfdd, and zebra, which an FRR node also runs) with the same
// sessions: both announce the VIP to three FRR routers on one switch. With
// BENCH_BINARY_B set, a third node runs that build of ours (an A/B pair in
// the same windows; logged, not recorded).
func BenchmarkIdleBGP(b *testing.B) {
	over := idleWindow()
	l, err := lab.New(b.Logf)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(l.Close)
	quiet(l)
	host := func(name string, a netip.Addr) *lab.Host {
		h, err := l.AddHost(name, netip.PrefixFrom(a, 24), netip.Prefix{}, false)
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	var routers, nodes []netip.Addr
	for i := range 3 {
		routers = append(routers, netip.AddrFrom4([4]byte{198, 51, 100, byte(1 + i)}))
	}
	bins := []string{binary}
	if other := os.Getenv("BENCH_BINARY_B"); other != "" {
		bins = append(bins, other)
	}
	for i := range len(bins) + 1 {
		nodes = append(nodes, nodeV4(i))
	}
	var frrs []*lab.FRR
	for i, r := range routers {
		f, err := host(fmt.Sprintf("r%d", i+1), r).StartFRR(lab.FRRConfig{
			BGP: lab.BGPRouterConfig(r, 65002, nodes, "", true), BFD: lab.BFDRouterConfig(50, 3)})
		if err != nil {
			b.Fatal(err)
		}
		frrs = append(frrs, f)
	}
	frrNode := host("frr", nodes[0])
	if _, err := frrNode.Exec("ip", "addr", "add", vip4.String(), "dev", "lo"); err != nil {
		b.Fatal(err)
	}
	fn, err := frrNode.StartFRR(lab.FRRConfig{BGP: lab.BGPNodeConfig(nodes[0], routers, vip4), BFD: lab.BFDRouterConfig(50, 3)})
	if err != nil {
		b.Fatal(err)
	}
	var peers []string
	for _, r := range routers {
		peers = append(peers, r.String()+"@65001")
	}
	var ours [][]int
	for i, bin := range bins {
		h := host(fmt.Sprintf("n%d", i+1), nodes[i+1])
		if _, err := h.StartAPIServer(6443); err != nil {
			b.Fatal(err)
		}
		env := append([]string{"NOVAEDGE_CP_VIP_MODE=bgp", "NOVAEDGE_CP_VIP_ADDRESS=" + vip4.String(),
			"NOVAEDGE_CP_VIP_SA_TOKEN_PATH=/nonexistent", "NOVAEDGE_BGP_LOCAL_AS=65002",
			"NOVAEDGE_BGP_ROUTER_ID=" + nodes[i+1].String(), "NOVAEDGE_BGP_PEERS=" + strings.Join(peers, ",")}, bfdEnv...)
		p, err := h.Start(h.Name, env, bin, "run")
		if err != nil {
			b.Fatal(err)
		}
		ours = append(ours, []int{p.PID()})
	}
	for _, f := range frrs {
		waitFRRSessions(b, f, nodes)
	}
	time.Sleep(10 * time.Second) // past FRR's BFD reset after Established, and start-up work
	b.ResetTimer()
	bgpdBFDD := []int{fn.Daemon("bgpd").PID(), fn.Daemon("bfdd").PID()}
	got := measureWindows(b, over, append(ours, bgpdBFDD, append(bgpdBFDD, fn.Daemon("zebra").PID()))...)
	b.StopTimer()
	names := []string{"novaedge-cpvip BGP+BFD", "novaedge-cpvip B build", "FRR node, bgpd+bfdd", "FRR node with zebra"}
	if len(ours) == 1 {
		names = slices.Delete(names, 1, 2)
	}
	for i, name := range names {
		b.Logf("%-30s CPU %.3f %% of a core, RSS %.1f MiB, %.1f wake-ups/s", name, got[i].CPU, got[i].RSS, got[i].Wakeups)
	}
	frr, frrZ := got[len(got)-2], got[len(got)-1]
	fig := func(v float64) Figure { return Figure{Median: v, N: 1} }
	const node, nodeZ = "FRR 8.4 node (bgpd + bfdd)", "FRR 8.4 node (bgpd + bfdd + zebra)"
	record(b, Row{Name: "idle CPU, BGP+BFD 50 ms x 3, three peers", Unit: "%", Ours: fig(got[0].CPU),
		Others: []Compared{{Tool: node, Figure: fig(frr.CPU)}, {Tool: nodeZ, Figure: fig(frrZ.CPU)}}, Note: idleNote(over)})
	record(b, Row{Name: "idle RSS, BGP+BFD 50 ms x 3, three peers", Unit: "MiB", Ours: fig(got[0].RSS),
		Others: []Compared{{Tool: node, Figure: fig(frr.RSS)}, {Tool: nodeZ, Figure: fig(frrZ.RSS)}}})
	record(b, Row{Name: "idle wake-ups/s, BGP+BFD 50 ms x 3, three peers", Unit: "/s", Ours: fig(got[0].Wakeups),
		Others: []Compared{{Tool: node, Figure: fig(frr.Wakeups)}, {Tool: nodeZ, Figure: fig(frrZ.Wakeups)}}, Note: idleNote(over)})
}

// waitFRRSessions waits until a router's BGP sessions and BFD sessions with
// every node are up and it installs the VIP via all of them.
func waitFRRSessions(t testing.TB, f *lab.FRR, nodes []netip.Addr) {
	t.Helper()
	err := lab.Eventually(60*time.Second, func() error {
		peers, err := f.BFDPeers()
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if peers[n.String()].Status != "up" {
				return fmt.Errorf("BFD with %s: %q", n, peers[n.String()].Status)
			}
		}
		hops, err := f.NextHops(vip4)
		if err != nil {
			return err
		}
		if len(hops) != len(nodes) {
			return fmt.Errorf("VIP via %v, want %v", hops, nodes)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// measureWindows measures every tree over BENCH_IDLE_WINDOWS (default 3)
// windows of d side by side and returns each tree's medians.
func measureWindows(b *testing.B, d time.Duration, trees ...[]int) []idleCost {
	n := 3
	if v, err := strconv.Atoi(os.Getenv("BENCH_IDLE_WINDOWS")); err == nil && v > 0 {
		n = v
	}
	per := make([][]idleCost, len(trees))
	for w := range n {
		for i, got := range measureAll(b, d, trees...) {
			per[i] = append(per[i], got)
			b.Logf("window %d, tree %d: CPU %.3f %%, RSS %.1f MiB (files %.1f MiB), %.1f wake-ups/s", w+1, i, got.CPU, got.RSS, got.File, got.Wakeups)
		}
	}
	out := make([]idleCost, len(trees))
	for i, ws := range per {
		out[i] = idleCost{CPU: median(ws, func(f idleCost) float64 { return f.CPU }),
			RSS: median(ws, func(f idleCost) float64 { return f.RSS }), File: median(ws, func(f idleCost) float64 { return f.File }),
			Wakeups: median(ws, func(f idleCost) float64 { return f.Wakeups })}
	}
	return out
}

// median returns the median (the lower one of an even count) of one field.
func median(ws []idleCost, field func(idleCost) float64) float64 {
	vals := make([]float64, len(ws))
	for j, w := range ws {
		vals[j] = field(w)
	}
	slices.Sort(vals)
	return vals[(len(vals)-1)/2]
}

// measureAll measures each process tree over the same d.
func measureAll(b *testing.B, d time.Duration, trees ...[]int) []idleCost {
	got := make([]idleCost, len(trees))
	var wg sync.WaitGroup
	for i, pids := range trees {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = footprintOver(b, pids, d)
		}()
	}
	wg.Wait()
	return got
}
