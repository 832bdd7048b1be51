package e2e

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// TestKillRestartLoopNoDoubleHolder kills the holder with SIGKILL and starts
// it again, ten times, while a monitor samples every node for the VIP: the
// restarted daemon resumes as master before any backup takes over, so the
// VIP never leaves the holder — every sample from the kill to past the time
// a backup would have taken over, or a resume that gave up would have
// released it, sees it there and nowhere else — and no two nodes ever hold
// it.
//   - At 1 s advertisements, restarted 200 ms later (the systemd unit's
//     RestartSec): within the backups' master-down interval.
//   - At 200 ms advertisements, restarted 1.5 s later (the kubelet, which
//     notices a dead container at its next relist, every second): long past
//     the master-down interval (0.72 s). The backups find the killed
//     master's host still answering ARP for the VIP and wait for it up to
//     RESTART_WAIT (4 s, docs/vrrp.md#our-own-restart).
func TestKillRestartLoopNoDoubleHolder(t *testing.T) {
	for _, tt := range []struct {
		name, interval string
		restart        time.Duration
		watch          time.Duration // from the kill
		why            string
	}{
		{"advert 1s, restarted after 200ms", "1s", 200 * time.Millisecond, 5 * time.Second,
			"the backups' master-down interval (3 x 1 s + the skew, 0.61 s) from the last advertisement before the kill, and a resume that gives up after three intervals from the restart"},
		{"advert 200ms, restarted after 1.5s", "200ms", 1500 * time.Millisecond, 5 * time.Second,
			"RESTART_WAIT (4 s) from the last advertisement before the kill, and a resume that gives up after as long from the restart"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 3, "NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32", "NOVAEDGE_CP_VIP_ADVERT_INTERVAL="+tt.interval)
			c.startAll(t)
			c.waitHolder(t, vip4, -1, 15*time.Second)
			mon := c.monitor(t, vip4)
			rounds := 10
			if testing.Short() {
				rounds = 3
			}
			for round := range rounds {
				h, _ := c.waitHolder(t, vip4, -1, 15*time.Second)
				away := c.watchAway(t, vip4, h)
				killed := time.Now()
				if err := c.procs[h].Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				_, _ = c.procs[h].Wait(5 * time.Second)
				time.Sleep(time.Until(killed.Add(tt.restart)))
				p := c.start(t, h)
				waitLine(t, p, 0, "resumed: the VIP was bound at start")
				time.Sleep(time.Until(killed.Add(tt.watch)))
				n, first, blind := away()
				switch {
				case n > 0:
					t.Errorf("round %d: the VIP was not on %s alone in %d samples (the first %s after the kill; watched %s, past %s)",
						round+1, c.nodes[h].Name, n, first, tt.watch, tt.why)
				case blind > blindLimit:
					t.Errorf("round %d: no sample kept for %s: the VIP was not watched", round+1, blind)
				}
				if i, err := p.WaitLine(0, 0, "Not resuming"); err == nil {
					t.Errorf("round %d: %s", round+1, p.Line(i))
				}
			}
			c.waitHolder(t, vip4, -1, 15*time.Second)
			double, most := mon.stop()
			figure(t, fmt.Sprintf("longest double holding over %d kill -9 + restart rounds (%s)", rounds, tt.name), double)
			if most > 1 {
				t.Errorf("two holders for %s (max %d at once)", double, most)
			}
		})
	}
}

// watchAway samples, every 5 ms until the returned function is called, whether
// p is on node h and no other; that function returns how many samples saw
// otherwise, when the first of them was (from the start), and the longest
// time without a kept sample (reads failed or took over sampleSpread).
func (c *cluster) watchAway(t testing.TB, p netip.Prefix, h int) func() (int, time.Duration, time.Duration) {
	start := time.Now()
	var n int
	var first, blind time.Duration
	last := start
	stop := every(t, 5*time.Millisecond, func(at time.Time) {
		hs, err := c.holders(p)
		if err != nil || time.Since(at) > sampleSpread {
			return
		}
		blind, last = max(blind, at.Sub(last)), at
		if len(hs) != 1 || hs[0] != h {
			if n == 0 {
				first = at.Sub(start).Round(time.Millisecond)
			}
			n++
		}
	})
	return func() (int, time.Duration, time.Duration) {
		stop()
		return n, first, max(blind, time.Since(last))
	}
}

// TestHealthFlappingDoesNotLeak flaps the apiserver hundreds of times and
// compares the daemon's open files, goroutines and memory before and after.
func TestHealthFlappingDoesNotLeak(t *testing.T) {
	l := newL2Lab(t)
	p := l.start(t, "NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450", "NOVAEDGE_CP_VIP_HEALTH_INTERVAL=20ms",
		"NOVAEDGE_CP_VIP_FAIL_THRESHOLD=1", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=200ms", "NOVAEDGE_CP_VIP_ADVERT_INTERVAL=20ms")
	l.waitVIP(t, vip4, true, 10*time.Second)
	time.Sleep(time.Second)
	fds0, gor0, rss0 := footprint(t, l, p)
	answers := []lab.Answer{lab.ServerError, lab.OK, lab.Down, lab.OK, lab.Hang, lab.OK}
	for i := range 300 {
		if err := l.api.Set(answers[i%len(answers)]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Millisecond)
	}
	if err := l.api.Set(lab.OK); err != nil {
		t.Fatal(err)
	}
	l.waitVIP(t, vip4, true, 10*time.Second)
	time.Sleep(2 * time.Second) // hanging requests time out, idle connections close
	fds1, gor1, rss1 := footprint(t, l, p)
	transitions := strings.Count(p.Output(), "API server health changed")
	t.Logf("%d health transitions; open files %d -> %d, goroutines %d -> %d, RSS %d -> %d KiB", transitions, fds0, fds1, gor0, gor1, rss0, rss1)
	if transitions < 100 {
		t.Errorf("only %d transitions: the flapping did not reach the daemon", transitions)
	}
	if fds1 > fds0+3 || gor1 > gor0+5 {
		t.Errorf("leak: open files %d -> %d, goroutines %d -> %d", fds0, fds1, gor0, gor1)
	}
	if rss1 > rss0+16*1024 {
		t.Errorf("RSS grew from %d to %d KiB", rss0, rss1)
	}
}

// footprint returns the daemon's open file count, goroutines and RSS in KiB.
func footprint(t *testing.T, l *l2Lab, p *lab.Process) (fds, goroutines, rssKiB int) {
	t.Helper()
	pid := strconv.Itoa(p.PID())
	out, err := l.node.Exec("sh", "-c", "ls /proc/"+pid+"/fd | wc -l; grep VmRSS /proc/"+pid+"/status")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(out)
	fds, _ = strconv.Atoi(f[0])
	rssKiB, _ = strconv.Atoi(f[2])
	_, m, err := l.node.HTTPGet("http://127.0.0.1:9450/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			goroutines, _ = strconv.Atoi(v)
		}
	}
	return fds, goroutines, rssKiB
}

func TestInterfaceDeletedAndCreatedAgain(t *testing.T) {
	c := newCluster(t, 2, "NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32")
	c.startAll(t)
	h, _ := c.waitHolder(t, vip4, -1, 15*time.Second)
	other := 1 - h
	if err := c.nodes[h].DeleteLink(); err != nil {
		t.Fatal(err)
	}
	got, d := c.waitHolder(t, vip4, h, 10*time.Second)
	if got != other {
		t.Fatalf("holder %s", c.nodes[got].Name)
	}
	figure(t, "takeover after the holder's interface was deleted", d)
	skip := c.procs[h].Lines()
	if err := c.nodes[h].CreateLink(); err != nil {
		t.Fatal(err)
	}
	// The re-created node hears VRRP again: exactly one holder, for good.
	_, d = c.waitHolder(t, vip4, -1, 15*time.Second)
	figure(t, "one holder again after the interface was created again", d)
	c.stayOne(t, vip4, 3*time.Second)
	hs, _ := c.holders(vip4)
	c.reach(t, vip4.Addr(), hs[0])
	// The node on the new interface takes part: it hears the master's adverts.
	if n := countLinesAfter(c.procs[h], skip, "Receiving VRRP advertisement failed"); n > 0 {
		t.Logf("%d receive errors while the interface was gone", n)
	}
	if err := c.procs[hs[0]].Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	next, _ := c.waitHolder(t, vip4, hs[0], 10*time.Second)
	c.reach(t, vip4.Addr(), next)
}
