package e2e

import (
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBGPGracefulStop: SIGTERM on one of two BGP nodes, time until the
// router's kernel route no longer has it (netlink event in the router).
func BenchmarkBGPGracefulStop(b *testing.B) {
	l := newBGPLab(b, 2)
	quiet(l.Lab)
	l.startFRR(b, false, "")
	l.start(b, 0)
	l.start(b, 1)
	both := []netip.Addr{nodeV4(0), nodeV4(1)}
	l.waitHops(b, vip4, 30*time.Second, both...)
	w, err := l.router.WatchRoute(vip4)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var ds []time.Duration
	b.ResetTimer()
	for range b.N {
		for trial := range benchTrials() {
			i := trial % 2
			stop := time.Now()
			if err := l.procs[i].Signal(syscall.SIGTERM); err != nil {
				b.Fatal(err)
			}
			l.waitHops(b, vip4, 10*time.Second, nodeV4(1-i))
			at, ok := w.FirstAfter(stop)
			if !ok {
				b.Fatal("no route change seen")
			}
			ds = append(ds, at.Sub(stop))
			b.Logf("trial %d: route without n%d after %s", trial+1, i+1, at.Sub(stop).Round(time.Millisecond))
			_, _ = l.procs[i].Wait(5 * time.Second)
			l.start(b, i)
			l.waitHops(b, vip4, 60*time.Second, both...)
		}
	}
	b.StopTimer()
	record(b, Row{Name: "BGP, graceful stop: router's route without the node", Unit: "ms", Ours: durFigure(ds)})
	b.Logf("BGP graceful stop: %v", durFigure(ds))
}
