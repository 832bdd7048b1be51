package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// cluster is n control-plane nodes, each with a stand-in apiserver, and a client.
type cluster struct {
	*lab.Lab
	nodes  []*lab.Host
	apis   []*lab.APIServer
	procs  []*lab.Process
	client *lab.Host
	extra  []string
	token  string
	ka     map[int]bool // nodes that run keepalived, not us
	kaCfg  map[int]lab.Keepalived
	env    map[int][]string // per node, on top of extra
	args   map[int][]string // per node, after "run"
	dir    string           // keepalived's files
	noAPI  bool             // no stand-in apiservers: the test brings real ones
	bin    string           // the daemon's build: binary unless a benchmark compares another
	cmd    map[int][]string // per node, the daemon's command instead of bin (an arm64 build under qemu)
}

func newCluster(t testing.TB, n int, extra ...string) *cluster {
	return newClusterOf(t, n, true, extra...)
}

// newClusterOf is newCluster, with stand-in apiservers on the nodes or none.
func newClusterOf(t testing.TB, n int, standIn bool, extra ...string) *cluster {
	t.Helper()
	l, err := lab.New(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	c := &cluster{Lab: l, extra: extra, noAPI: !standIn, ka: map[int]bool{}, kaCfg: map[int]lab.Keepalived{}, env: map[int][]string{}, args: map[int][]string{}, cmd: map[int][]string{}, procs: make([]*lab.Process, n), token: filepath.Join(t.TempDir(), "token"), dir: t.TempDir(), bin: binary}
	for i := range n {
		c.addNode(t, fmt.Sprintf("n%d", i+1))
	}
	if c.client, err = l.AddHost("cl", netip.MustParsePrefix("192.0.2.2/24"), netip.MustParsePrefix("2001:db8::2/64"), false); err != nil {
		t.Fatal(err)
	}
	return c
}

// addKeepalived adds a host running keepalived (with a stand-in apiserver,
// so a client reaching the VIP there is answered too) as the next node.
func (c *cluster) addKeepalived(t testing.TB, name string, k lab.Keepalived) (int, *lab.Process) {
	t.Helper()
	i := c.addNode(t, name)
	p, err := c.nodes[i].StartKeepalived(c.dir, k)
	if err != nil {
		t.Fatal(err)
	}
	c.procs = append(c.procs, p)
	c.ka[i], c.kaCfg[i] = true, k
	return i, p
}

// restart starts node i again: our daemon, or keepalived with its config.
func (c *cluster) restart(i int) error {
	var p *lab.Process
	var err error
	if c.ka[i] {
		p, err = c.nodes[i].StartKeepalived(c.dir, c.kaCfg[i])
	} else {
		p, err = c.startErr(i)
	}
	if err == nil {
		c.procs[i] = p
	}
	return err
}

// addNode adds the next node host (192.0.2.11 + index), with a stand-in
// apiserver unless the cluster has none.
func (c *cluster) addNode(t testing.TB, name string) int {
	t.Helper()
	i := len(c.nodes)
	h, err := c.AddHost(name, netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(11 + i)}), 24),
		netip.MustParsePrefix(fmt.Sprintf("2001:db8::%x/64", 0x11+i)), true)
	if err != nil {
		t.Fatal(err)
	}
	var api *lab.APIServer
	if !c.noAPI {
		if api, err = h.StartAPIServer(6443); err != nil {
			t.Fatal(err)
		}
	}
	c.nodes, c.apis = append(c.nodes, h), append(c.apis, api)
	return i
}

// start starts (or restarts) the daemon on node i.
func (c *cluster) start(t testing.TB, i int) *lab.Process {
	t.Helper()
	p, err := c.startErr(i)
	if err != nil {
		t.Fatal(err)
	}
	c.procs[i] = p
	return p
}

func (c *cluster) startErr(i int) (*lab.Process, error) {
	cmd := c.cmd[i]
	if cmd == nil {
		cmd = []string{c.bin}
	}
	return c.nodes[i].Start(c.nodes[i].Name, c.nodeEnv(i), append(append(append([]string{}, cmd...), "run"), c.args[i]...)...)
}

// nodeEnv is the environment node i's daemon runs with.
func (c *cluster) nodeEnv(i int) []string {
	env := []string{
		"NOVAEDGE_CP_VIP_ADDRESS=" + vip4.String() + "," + vip6.String(),
		"NOVAEDGE_CP_VIP_HEALTH_INTERVAL=100ms", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=300ms",
		"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=100ms", "NOVAEDGE_CP_VIP_METRICS_ADDR=",
		"NOVAEDGE_CP_VIP_SA_TOKEN_PATH=" + c.token,
	}
	return append(append(env, c.extra...), c.env[i]...)
}

func (c *cluster) startAll(t testing.TB) {
	t.Helper()
	for i := range c.nodes {
		if !c.ka[i] {
			c.start(t, i)
		}
	}
}

// holders returns the indexes of the nodes holding p.
func (c *cluster) holders(p netip.Prefix) ([]int, error) {
	var out []int
	for i, n := range c.nodes {
		_, ok, err := n.Has(p)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, i)
		}
	}
	return out, nil
}

// held reports whether node i holds p (false when it cannot be read).
func (c *cluster) held(i int, p netip.Prefix) bool {
	_, ok, err := c.nodes[i].Has(p)
	return err == nil && ok
}

// waitHolder waits until exactly one node holds p, optionally not node not,
// and returns it and the time it took.
func (c *cluster) waitHolder(t testing.TB, p netip.Prefix, not int, within time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	holder := -1
	err := lab.Eventually(within, func() error {
		h, err := c.holders(p)
		if err != nil {
			return err
		}
		if len(h) != 1 || h[0] == not {
			return fmt.Errorf("holders of %s: %v", p, c.names(h))
		}
		holder = h[0]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return holder, time.Since(start)
}

// settledHolder waits until one node (not node not) has held p alone in
// every sample for three of the lab's 100 ms advertisement intervals: the
// election has settled, any simultaneous takeover resolved. It returns
// that node.
func (c *cluster) settledHolder(t testing.TB, p netip.Prefix, not int, within time.Duration) int {
	t.Helper()
	holder, since := -1, time.Now()
	err := lab.Eventually(within, func() error {
		h, err := c.holders(p)
		switch {
		case err != nil:
			return err
		case len(h) != 1 || h[0] == not:
			holder = -1
			return fmt.Errorf("holders of %s: %v", p, c.names(h))
		case h[0] != holder:
			holder, since = h[0], time.Now()
		}
		if time.Since(since) < 300*time.Millisecond {
			return fmt.Errorf("%s has held %s for %s only", c.nodes[holder].Name, p, time.Since(since).Round(time.Millisecond))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return holder
}

// stayOne checks for d that p always has exactly one holder.
func (c *cluster) stayOne(t testing.TB, p netip.Prefix, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if h, err := c.holders(p); err != nil || len(h) != 1 {
			t.Fatalf("holders of %s: %v (%v), want exactly one", p, c.names(h), err)
		}
	}
}

func (c *cluster) names(idx []int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, c.nodes[i].Name)
	}
	return out
}

// monitor samples the holders of p every 5 ms until stopped and reports the
// longest stretch with more than one holder: from the first sample that saw
// two to the last. That is the overlap to within one sample's reads (at
// most sampleSpread: a sample reads the nodes one after another), and a
// loaded machine does not inflate it: a sample whose reads failed or took
// longer than sampleSpread cannot tell "at once" from "one after the other"
// and is left out. A monitor that kept no sample for more than blindLimit
// has not watched: stop fails the test.
type monitor struct {
	t           testing.TB
	mu          sync.Mutex
	longest     time.Duration
	total       time.Duration // all double holding
	doubleSince time.Time     // the first sample of the current stretch
	doubleLast  time.Time     // its last
	maxHolders  int
	lastKept    time.Time
	blind       time.Duration // the longest time without a kept sample
	cancel      context.CancelFunc
	done        chan struct{}
}

// sampleSpread is the longest a sample's reads of all nodes may take.
const sampleSpread = 20 * time.Millisecond

// blindLimit is the longest a sampler may go without a kept sample before
// its verdict means nothing.
const blindLimit = time.Second

func (c *cluster) monitor(t testing.TB, p netip.Prefix) *monitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &monitor{t: t, cancel: cancel, done: make(chan struct{}), lastKept: time.Now()}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			start := time.Now()
			h, err := c.holders(p)
			if err == nil && time.Since(start) <= sampleSpread {
				m.sample(start, len(h))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return m
}

func (m *monitor) sample(at time.Time, holders int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blind = max(m.blind, at.Sub(m.lastKept))
	m.lastKept = at
	m.maxHolders = max(m.maxHolders, holders)
	switch {
	case holders > 1:
		if m.doubleSince.IsZero() {
			m.doubleSince = at
		}
		m.doubleLast = at
	case !m.doubleSince.IsZero():
		m.endStretch()
	}
}

// endStretch closes the current stretch of two holders (mu held).
func (m *monitor) endStretch() {
	d := m.doubleLast.Sub(m.doubleSince)
	m.longest = max(m.longest, d)
	m.total += d
	m.doubleSince = time.Time{}
}

func (m *monitor) stop() (longestDouble time.Duration, maxHolders int) {
	m.cancel()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.doubleSince.IsZero() {
		m.endStretch()
	}
	if m.blind = max(m.blind, time.Since(m.lastKept)); m.blind > blindLimit {
		m.t.Errorf("the holder monitor kept no sample for %s (reads failed or took over %s): it has not watched", m.blind.Round(time.Millisecond), sampleSpread)
	}
	return m.longest, m.maxHolders
}

// doubleTotal is the time two or more nodes held the VIP, all episodes (after stop).
func (m *monitor) doubleTotal() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

// reach checks that the client reaches the apiserver of node want through the VIP.
func (c *cluster) reach(t testing.TB, vip netip.Addr, want int) {
	t.Helper()
	err := lab.Eventually(5*time.Second, func() error {
		who, err := c.client.Whoami(vip, 6443, time.Second)
		if err != nil {
			return err
		}
		if who != c.nodes[want].Name {
			return fmt.Errorf("answered by %s, want %s", who, c.nodes[want].Name)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("client via %s: %v", vip, err)
	}
}

func lines(p *lab.Process, parts ...string) int {
	n := 0
	for _, l := range strings.Split(p.Output(), "\n") {
		if containsAll(l, parts) {
			n++
		}
	}
	return n
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
