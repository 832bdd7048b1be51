package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// prober opens a TCP connection to addr from the client every 10 ms, each
// attempt on its own with a 200 ms timeout, and records which succeeded.
type prober struct {
	mu     sync.Mutex
	tries  []probe
	cancel context.CancelFunc
	done   chan struct{}
}

type probe struct {
	at time.Time
	ok bool
}

func startProber(client *lab.Host, addr netip.AddrPort) *prober {
	ctx, cancel := context.WithCancel(context.Background())
	p := &prober{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		var wg sync.WaitGroup
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for ctx.Err() == nil {
			at := time.Now()
			wg.Add(1)
			go func() {
				defer wg.Done()
				dctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				c, err := client.Dial(dctx, addr.String())
				if err == nil {
					c.Close()
				}
				p.mu.Lock()
				p.tries = append(p.tries, probe{at: at, ok: err == nil})
				p.mu.Unlock()
			}()
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
		wg.Wait()
	}()
	return p
}

// outage returns the gap the client saw after from: from the last success
// before the first failure to the first success after it; ok is false while
// the client has not recovered.
func (p *prober) outage(from time.Time) (time.Duration, bool) {
	p.mu.Lock()
	tries := slices.Clone(p.tries)
	p.mu.Unlock()
	slices.SortFunc(tries, func(a, b probe) int { return a.at.Compare(b.at) })
	lastOK, firstFail := time.Time{}, -1
	for i, t := range tries {
		if t.at.Before(from) {
			if t.ok {
				lastOK = t.at
			}
			continue
		}
		if !t.ok {
			firstFail = i
			break
		}
		lastOK = t.at
	}
	if firstFail < 0 || lastOK.IsZero() {
		return 0, false
	}
	for _, t := range tries[firstFail:] {
		if t.ok {
			return t.at.Sub(lastOK), true
		}
	}
	return 0, false
}

// steady reports an error unless every attempt of the last d succeeded.
func (p *prober) steady(d time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tries) == 0 || time.Since(p.tries[0].at) < d {
		return fmt.Errorf("probing for less than %s", d)
	}
	for _, t := range p.tries {
		if time.Since(t.at) <= d && !t.ok {
			return fmt.Errorf("connects to the VIP still fail")
		}
	}
	return nil
}

func (p *prober) stop() { p.cancel(); <-p.done }

// failoverGroup is one VIP served by a group of hosts: ours or keepalived's.
type failoverGroup struct {
	name  string
	vip   netip.Prefix
	hosts []int // node indexes in the cluster
}

func (g failoverGroup) holder(c *cluster) (int, error) {
	for _, i := range g.hosts {
		if _, ok, err := c.nodes[i].Has(g.vip); err != nil {
			return -1, err
		} else if ok {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%s: nobody holds %s", g.name, g.vip)
}

// linkCutTrial cuts the group holder's switch port and returns the outage the client saw.
func linkCutTrial(b *testing.B, c *cluster, g failoverGroup) time.Duration {
	b.Helper()
	h, err := g.holder(c)
	if err != nil {
		b.Fatal(err)
	}
	p := startProber(c.client, netip.AddrPortFrom(g.vip.Addr(), 6443))
	defer p.stop()
	if err := lab.Eventually(20*time.Second, func() error { return p.steady(300 * time.Millisecond) }); err != nil {
		b.Fatalf("%s before the cut: %v", g.name, err)
	}
	if h, err = g.holder(c); err != nil {
		b.Fatal(err)
	}
	cut := time.Now()
	if err := c.nodes[h].SetSwitchPort(false); err != nil {
		b.Fatal(err)
	}
	var outage time.Duration
	err = lab.Eventually(10*time.Second, func() error {
		var ok bool
		if outage, ok = p.outage(cut); !ok {
			return fmt.Errorf("%s: the client has not recovered", g.name)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.nodes[h].SetSwitchPort(true); err != nil {
		b.Fatal(err)
	}
	return outage
}

// BenchmarkL2LinkCutOutage measures the outage a client sees when the VIP
// holder's link is cut, with 100 ms advertisements: three of our nodes and
// three keepalived 2.2 nodes in the same lab (other VRID and VIP), trials
// alternating. BENCH_TRIALS sets the trial count (default 20).
func BenchmarkL2LinkCutOutage(b *testing.B) {
	trials := benchTrials()
	c, ours, ka := newFailoverLab(b)
	b.ResetTimer()
	results := map[string][]time.Duration{}
	for range b.N {
		for trial := range trials {
			for _, g := range []failoverGroup{ours, ka} {
				d := linkCutTrial(b, c, g)
				results[g.name] = append(results[g.name], d)
				b.Logf("trial %d %-15s outage %s", trial+1, g.name, d.Round(time.Millisecond))
			}
		}
	}
	b.StopTimer()
	om, op := stats(results[ours.name])
	km, kp := stats(results[ka.name])
	b.Logf("link cut, advert 100 ms, %d trials each: novaedge-cpvip median %s p95 %s; keepalived median %s p95 %s; ratio %.2f",
		trials, om, op, km, kp, float64(om)/float64(km))
	kf := durFigure(results[ka.name])
	record(b, Row{Name: "L2, holder's link cut, advert 100 ms: client-seen outage", Unit: "ms",
		Ours: durFigure(results[ours.name]), Others: versus("keepalived 2.2.7", kf)})
	b.ReportMetric(float64(om.Milliseconds()), "ours-median-ms")
	b.ReportMetric(float64(op.Milliseconds()), "ours-p95-ms")
	b.ReportMetric(float64(km.Milliseconds()), "keepalived-median-ms")
	b.ReportMetric(float64(kp.Milliseconds()), "keepalived-p95-ms")
}

// benchTrials is BENCH_TRIALS, or 20.
func benchTrials() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_TRIALS")); err == nil && n > 0 {
		return n
	}
	return 20
}

// quiet silences the lab's log unless BENCH_VERBOSE is set.
func quiet(l *lab.Lab) {
	if os.Getenv("BENCH_VERBOSE") == "" {
		l.Logf = func(string, ...any) {}
	}
}

// newFailoverLab is three of our nodes (VRID 51, 192.0.2.100) and three
// keepalived nodes (VRID 52, 192.0.2.101) on one switch, 100 ms adverts,
// both groups with a holder.
func newFailoverLab(b *testing.B) (*cluster, failoverGroup, failoverGroup) {
	b.Helper()
	needKeepalived(b)
	kaVIP := netip.MustParsePrefix("192.0.2.101/32")
	c := newCluster(b, 3, v4only)
	quiet(c.Lab)
	ours := failoverGroup{name: "novaedge-cpvip", vip: vip4, hosts: []int{0, 1, 2}}
	ka := failoverGroup{name: "keepalived", vip: kaVIP}
	for i := range 3 {
		idx, _ := c.addKeepalived(b, fmt.Sprintf("ka%d", i+1), lab.Keepalived{VRID: 52, Priority: 100, Advert: "0.1", VIP: kaVIP.String()})
		ka.hosts = append(ka.hosts, idx)
	}
	c.startAll(b)
	if err := lab.Eventually(20*time.Second, func() error {
		for _, g := range []failoverGroup{ours, ka} {
			if _, err := g.holder(c); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return c, ours, ka
}

// stats returns the median and the 95th percentile (nearest rank).
func stats(ds []time.Duration) (median, p95 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.5) - 1
		return s[min(max(i, 0), len(s)-1)].Round(time.Millisecond)
	}
	return rank(0.5), rank(0.95)
}
