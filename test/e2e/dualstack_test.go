package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// apartMonitor samples which nodes hold the IPv4 and the IPv6 VIP and adds
// up the time the two sets differ (the VIPs on different nodes, or one held
// and the other not).
type apartMonitor struct {
	mu     sync.Mutex
	apart  time.Duration
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *cluster) watchApart() *apartMonitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &apartMonitor{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		last, wasApart := time.Now(), false
		for ctx.Err() == nil {
			h4, h6, err := c.holdersOfBoth()
			now := time.Now()
			if err == nil {
				m.mu.Lock()
				if wasApart {
					m.apart += now.Sub(last)
				}
				m.mu.Unlock()
				wasApart, last = !slices.Equal(h4, h6), now
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return m
}

// take returns the time apart so far and starts counting from zero.
func (m *apartMonitor) take() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.apart
	m.apart = 0
	return d
}

func (m *apartMonitor) stop() { m.cancel(); <-m.done }

// holdersOfBoth reads every node's addresses once and returns the holders
// of vip4 and of vip6.
func (c *cluster) holdersOfBoth() (h4, h6 []int, err error) {
	for i, n := range c.nodes {
		addrs, err := n.Addrs()
		if err != nil {
			return nil, nil, err
		}
		for _, a := range addrs {
			switch a.Prefix {
			case vip4:
				h4 = append(h4, i)
			case vip6:
				h6 = append(h6, i)
			}
		}
	}
	return h4, h6, nil
}

// dualFailover is one way the holder of a dual-stack VIP fails, and heals.
type dualFailover struct {
	name string
	fail func(c *cluster, h int) error
	heal func(c *cluster, h int) error
}

var dualFailovers = []dualFailover{
	{"link cut", func(c *cluster, h int) error { return c.nodes[h].SetSwitchPort(false) },
		func(c *cluster, h int) error { return c.nodes[h].SetSwitchPort(true) }},
	{"apiserver death", func(c *cluster, h int) error { return c.apis[h].Set(lab.Down) },
		func(c *cluster, h int) error { return c.apis[h].Set(lab.OK) }},
	{"SIGTERM", func(c *cluster, h int) error { return c.procs[h].Signal(syscall.SIGTERM) },
		func(c *cluster, h int) error {
			if _, err := c.procs[h].Wait(5 * time.Second); err != nil {
				return err
			}
			return c.restart(h)
		}},
}

// dualRound fails the holder of both VIPs one way, waits until one other
// node holds both, heals, waits until one node holds both again, and
// returns how long the two VIPs were apart in the round.
func (c *cluster) dualRound(f dualFailover, m *apartMonitor) (time.Duration, error) {
	h, err := c.sameHolder(-1)
	if err != nil {
		return 0, err
	}
	m.take()
	if err := f.fail(c, h); err != nil {
		return 0, err
	}
	if _, err := c.sameHolder(h); err != nil {
		return 0, fmt.Errorf("after %s of %s: %w", f.name, c.nodes[h].Name, err)
	}
	if err := f.heal(c, h); err != nil {
		return 0, err
	}
	if _, err := c.sameHolder(-1); err != nil {
		return 0, fmt.Errorf("after healing %s: %w", c.nodes[h].Name, err)
	}
	time.Sleep(300 * time.Millisecond) // three advertisements: settled
	return m.take(), nil
}

// sameHolder waits until exactly one node, not not, holds both VIPs (the
// cut-off node may still hold its own copy: it is not counted).
func (c *cluster) sameHolder(not int) (int, error) {
	holder := -1
	err := lab.Eventually(20*time.Second, func() error {
		h4, h6, err := c.holdersOfBoth()
		if err != nil {
			return err
		}
		h4 = slices.DeleteFunc(h4, func(i int) bool { return i == not })
		h6 = slices.DeleteFunc(h6, func(i int) bool { return i == not })
		if len(h4) != 1 || !slices.Equal(h4, h6) {
			return fmt.Errorf("IPv4 VIP on %v, IPv6 VIP on %v", c.names(h4), c.names(h6))
		}
		holder = h4[0]
		return nil
	})
	return holder, err
}

// TestDualStackOneHolder: three nodes, an IPv4 and an IPv6 VIP; after every
// kind of failover (three of each) both VIPs settle on the same node.
func TestDualStackOneHolder(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll(t)
	m := c.watchApart()
	defer m.stop()
	for round := range 9 {
		f := dualFailovers[round%3]
		apart, err := c.dualRound(f, m)
		if err != nil {
			t.Fatalf("round %d (%s): %v", round+1, f.name, err)
		}
		t.Logf("round %d, %s: VIPs apart %s", round+1, f.name, apart)
	}
}

// BenchmarkDualStackApart: 50 failovers of each kind (BENCH_DUAL_TRIALS)
// with a dual-stack VIP, advert 100 ms, health 100 ms x 3; the row is how
// long the two VIPs were on different nodes per failover.
func BenchmarkDualStackApart(b *testing.B) {
	trials := 50
	if n := benchTrials(); n != 20 {
		trials = n
	}
	c := newCluster(b, 3)
	quiet(c.Lab)
	c.startAll(b)
	m := c.watchApart()
	defer m.stop()
	var all []time.Duration
	b.ResetTimer()
	for range b.N {
		for _, f := range dualFailovers {
			for trial := range trials {
				apart, err := c.dualRound(f, m)
				if err != nil {
					b.Fatalf("%s, trial %d: %v", f.name, trial+1, err)
				}
				all = append(all, apart)
			}
		}
	}
	b.StopTimer()
	r := Row{Name: fmt.Sprintf("L2 dual-stack VIP, %d failovers of each kind (link cut, apiserver death, SIGTERM), advert 100 ms: time the IPv4 and IPv6 VIPs were on different nodes per failover", trials),
		Unit: "ms", Ours: durFigure(all), Note: fmt.Sprintf("max %s; both VIPs on one node after every failover", slices.Max(all).Round(time.Millisecond))}
	b.Logf("%s: %+v", r.Name, r.Ours)
	record(b, r)
}
