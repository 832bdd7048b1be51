package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
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

// recoveredFor is how long the client must have connected without a
// failure for a failover to count as over.
const recoveredFor = 500 * time.Millisecond

// outage is outageOf the probes so far.
func (p *prober) outage(from time.Time) (time.Duration, bool) {
	p.mu.Lock()
	tries := slices.Clone(p.tries)
	p.mu.Unlock()
	slices.SortFunc(tries, func(a, b probe) int { return a.at.Compare(b.at) })
	return outageOf(tries, from)
}

// outageOf returns the outage the client saw after from in tries (in time
// order): from the last success before the first failure after from, to the
// first success after the last failure; ok is false until there is such a
// failure and the client has connected without one for recoveredFor since.
// A lone success in the middle (two masters for a moment, the loser's
// gratuitous ARP last) does not end the outage.
func outageOf(tries []probe, from time.Time) (time.Duration, bool) {
	first, last := -1, -1
	for i, t := range tries {
		if !t.ok && !t.at.Before(from) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 1 || last+1 >= len(tries) || tries[len(tries)-1].at.Sub(tries[last+1].at) < recoveredFor {
		return 0, false
	}
	lastOK := -1
	for i := first - 1; i >= 0 && lastOK < 0; i-- {
		if tries[i].ok {
			lastOK = i
		}
	}
	if lastOK < 0 {
		return 0, false
	}
	return tries[last+1].at.Sub(tries[lastOK].at), true
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

// stopped stops the prober and returns its probes in time order.
func (p *prober) stopped() []probe {
	p.stop()
	slices.SortFunc(p.tries, func(a, b probe) int { return a.at.Compare(b.at) })
	return p.tries
}

// failoverGroup is one VIP served by a group of hosts: ours or keepalived's.
type failoverGroup struct {
	name   string // "VRID 51"
	tool   string // toolOurs or toolKeepalived
	advert time.Duration
	vip    netip.Prefix
	hosts  []int // node indexes in the cluster
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

// stats returns the median and the 95th percentile (nearest rank).
func stats(ds []time.Duration) (median, p95 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := sorted(ds)
	return nearestRank(s, 0.5).Round(time.Millisecond), nearestRank(s, 0.95).Round(time.Millisecond)
}

// sorted returns a sorted copy of xs.
func sorted[T cmp.Ordered](xs []T) []T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// nearestRank is the q quantile of sorted s (nearest rank); s not empty.
func nearestRank[T any](s []T, q float64) T {
	return s[min(max(int(q*float64(len(s))+0.5)-1, 0), len(s)-1)]
}
