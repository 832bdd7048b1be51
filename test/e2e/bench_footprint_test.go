package e2e

import (
	"cmp"
	"fmt"
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
// children's: keepalived's check scripts) and RSS (KiB) now.
func usage(t testing.TB, pids []int) (ticks, rssKiB int) {
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
		status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.Atoi(strings.Fields(v)[0])
				rssKiB += kb
			}
		}
	}
	return ticks, rssKiB
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

// footprintOver measures CPU % of one core and RSS (MiB) of pids over d.
func footprintOver(t testing.TB, pids []int, d time.Duration) (cpu, rssMiB float64) {
	t0, _ := usage(t, pids)
	start := time.Now()
	time.Sleep(d)
	t1, rss := usage(t, pids)
	const hz = 100 // USER_HZ on Linux
	return float64(t1-t0) / hz / time.Since(start).Seconds() * 100, float64(rss) / 1024
}

// BenchmarkIdleFootprint measures CPU and RSS over BENCH_IDLE_WINDOWS
// windows of BENCH_IDLE_SECONDS (default 3 of 60 s; medians) with one VIP held: first ours in L2 (advert 1 s, health 1 s)
// and keepalived (advert 1 s) at the same time, each in a lab of its own
// (neither hears the other's advertisements, as in a cluster of one kind),
// and keepalived as the kubeadm guide deploys it for an apiserver (its
// vrrp_script forks curl every 3 s); then ours in BGP with BFD at 50 ms x 3
// peering FRR, alone.
func BenchmarkIdleFootprint(b *testing.B) {
	needKeepalived(b)
	secs := 60
	if n, err := strconv.Atoi(os.Getenv("BENCH_IDLE_SECONDS")); err == nil && n > 0 {
		secs = n
	}
	over := time.Duration(secs) * time.Second
	c := newCluster(b, 1, "NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32", "NOVAEDGE_CP_VIP_HEALTH_INTERVAL=1s",
		"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=1s")
	quiet(c.Lab)
	c.startAll(b)
	k := newCluster(b, 0)
	quiet(k.Lab)
	_, kp := k.addKeepalived(b, "ka", lab.Keepalived{VRID: 51, Priority: 100, Advert: "1", VIP: vip4.String()})
	ks := newCluster(b, 0)
	quiet(ks.Lab)
	_, ksp := ks.addKeepalived(b, "ks", kubeadmKeepalived(51, vip4, 100))
	for _, cl := range []*cluster{c, k, ks} {
		cl.waitHolder(b, vip4, -1, 30*time.Second)
	}
	time.Sleep(5 * time.Second) // settled: past start-up work
	b.ResetTimer()
	l2 := measureWindows(b, over, []int{c.procs[0].PID()}, children(kp.PID()), children(ksp.PID()))
	c.Close()
	k.Close()
	ks.Close()
	g := newBGPLab(b, 1)
	quiet(g.Lab)
	g.startFRRWithBFD(b)
	g.start(b, 0, bfdEnv...)
	g.waitBFD(b, nodeV4(0), "up", 30*time.Second)
	g.waitHops(b, vip4, 30*time.Second, nodeV4(0))
	time.Sleep(5 * time.Second) // past FRR's BFD reset after Established
	bgp := measureWindows(b, over, []int{g.procs[0].PID()})
	b.StopTimer()
	for i, name := range []string{"novaedge-cpvip L2", "keepalived L2", "keepalived L2, kubeadm script"} {
		b.Logf("%-30s CPU %.3f %% of a core, RSS %.1f MiB over %d s", name, l2[i][0], l2[i][1], secs)
	}
	b.Logf("%-30s CPU %.3f %% of a core, RSS %.1f MiB over %d s", "novaedge-cpvip BGP+BFD 50 ms", bgp[0][0], bgp[0][1], secs)
	note := fmt.Sprintf("median of %s windows of %d s", cmp.Or(os.Getenv("BENCH_IDLE_WINDOWS"), "3"), secs)
	record(b, Row{Name: "idle CPU, one VIP held, L2", Unit: "%", Ours: Figure{Median: l2[0][0], N: 1},
		Others: []Compared{{Tool: "keepalived 2.2.7", Figure: Figure{Median: l2[1][0], N: 1}},
			{Tool: "keepalived 2.2.7 (kubeadm guide's check script)", Figure: Figure{Median: l2[2][0], N: 1}}}, Note: note})
	record(b, Row{Name: "idle RSS, one VIP held, L2", Unit: "MiB", Ours: Figure{Median: l2[0][1], N: 1},
		Others: versus("keepalived 2.2.7", Figure{Median: l2[1][1], N: 1})})
	record(b, Row{Name: "idle CPU, BGP+BFD 50 ms x 3", Unit: "%", Ours: Figure{Median: bgp[0][0], N: 1}, Note: note})
	record(b, Row{Name: "idle RSS, BGP+BFD 50 ms x 3", Unit: "MiB", Ours: Figure{Median: bgp[0][1], N: 1}})
}

// measureWindows measures every tree over BENCH_IDLE_WINDOWS (default 3)
// windows of d side by side and returns each tree's median CPU % and RSS MiB.
func measureWindows(b *testing.B, d time.Duration, trees ...[]int) [][2]float64 {
	n := 3
	if v, err := strconv.Atoi(os.Getenv("BENCH_IDLE_WINDOWS")); err == nil && v > 0 {
		n = v
	}
	per := make([][][2]float64, len(trees))
	for w := range n {
		for i, got := range measureAll(b, d, trees...) {
			per[i] = append(per[i], got)
			b.Logf("window %d, tree %d: CPU %.3f %%, RSS %.1f MiB", w+1, i, got[0], got[1])
		}
	}
	out := make([][2]float64, len(trees))
	for i, ws := range per {
		for k := range 2 {
			vals := make([]float64, len(ws))
			for j, w := range ws {
				vals[j] = w[k]
			}
			slices.Sort(vals)
			out[i][k] = vals[(len(vals)-1)/2]
		}
	}
	return out
}

// measureAll measures CPU % and RSS MiB of each process tree over the same d.
func measureAll(b *testing.B, d time.Duration, trees ...[]int) [][2]float64 {
	got := make([][2]float64, len(trees))
	var wg sync.WaitGroup
	for i, pids := range trees {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cpu, rss := footprintOver(b, pids, d)
			got[i] = [2]float64{cpu, rss}
		}()
	}
	wg.Wait()
	return got
}
