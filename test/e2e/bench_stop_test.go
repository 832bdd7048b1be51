package e2e

import (
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// BenchmarkL2GracefulStop: SIGTERM on the holder (ours sends priority 0 and
// releases; so does keepalived), client-seen outage, three nodes each,
// 100 ms advertisements, trials alternating.
func BenchmarkL2GracefulStop(b *testing.B) {
	c, ours, ka := newFailoverLab(b)
	results := map[string][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for trial := range benchTrials() {
			for _, g := range []failoverGroup{ours, ka} {
				var h int
				if err := lab.Eventually(20*time.Second, func() (err error) { h, err = g.holder(c); return err }); err != nil {
					b.Fatal(err)
				}
				p := startProber(c.client, netip.AddrPortFrom(g.vip.Addr(), 6443))
				if err := lab.Eventually(20*time.Second, func() error { return p.steady(300 * time.Millisecond) }); err != nil {
					b.Fatal(err)
				}
				stop := time.Now()
				if err := c.procs[h].Signal(syscall.SIGTERM); err != nil {
					b.Fatal(err)
				}
				var outage time.Duration
				err := lab.Eventually(10*time.Second, func() error {
					var ok bool
					if outage, ok = p.outage(stop); !ok {
						return fmt.Errorf("%s: the client has not recovered", g.name)
					}
					return nil
				})
				p.stop()
				if err != nil {
					b.Fatal(err)
				}
				results[g.name] = append(results[g.name], outage)
				b.Logf("trial %d %-15s outage %s", trial+1, g.name, outage.Round(time.Millisecond))
				_, _ = c.procs[h].Wait(5 * time.Second)
				c.restart(b, h)
				time.Sleep(time.Second) // back as backup
			}
		}
	}
	b.StopTimer()
	kf := durFigure(results[ka.name])
	record(b, Row{Name: "L2, graceful stop of the holder, advert 100 ms: client-seen outage", Unit: "ms",
		Ours: durFigure(results[ours.name]), Others: versus("keepalived 2.2.7", kf)})
	b.Logf("graceful stop: ours %v, keepalived %v (median, p95)", durFigure(results[ours.name]), kf)
}

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
