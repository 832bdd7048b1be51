package e2e

import (
	"fmt"
	"math"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// spreadEnv turns spreading on with every node's address listed: the same
// list on each node, its own skipped.
func spreadEnv(c *realCluster) []string {
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.IPv4.Addr().String())
	}
	return []string{"NOVAEDGE_CP_VIP_SPREAD=true", "NOVAEDGE_CP_VIP_SPREAD_BACKENDS=" + strings.Join(addrs, ",")}
}

// spreadStatus is what status -o json says of spreading.
type spreadStatus struct {
	Spread []struct {
		Address      string `json:"address"`
		Local        bool   `json:"local"`
		Health       string `json:"health"`
		Connections  uint64 `json:"connections"`
		DialFailures uint64 `json:"dial_failures"`
	} `json:"spread_backends"`
}

func readSpread(t testing.TB, h *lab.Host) spreadStatus { return readStatus[spreadStatus](t, h) }

// lineCounts is how many lines each node's daemon has logged so far.
func (c *realCluster) lineCounts() []int {
	n := make([]int, len(c.procs))
	for i, p := range c.procs {
		n[i] = p.Lines()
	}
	return n
}

// lineAt is when line i of p's output was logged (its time= field).
func lineAt(t testing.TB, p *lab.Process, i int) time.Time {
	t.Helper()
	at, ok := logLineTime(p.Line(i))
	if !ok {
		t.Fatalf("no time in %q", p.Line(i))
	}
	return at
}

// backendOf is the backend at addr in st (zero: not listed).
func backendOf(st spreadStatus, addr string) (b struct {
	Connections, DialFailures uint64
}) {
	for _, s := range st.Spread {
		if strings.HasPrefix(s.Address, addr+":") {
			b.Connections, b.DialFailures = s.Connections, s.DialFailures
		}
	}
	return b
}

// served counts the probes each apiserver answered since from (its audit log).
func (c *realCluster) served(t testing.TB, from time.Time) []int {
	t.Helper()
	out := make([]int, len(c.nodes))
	for i := range c.nodes {
		events, err := c.cp.Audit(i)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if strings.HasPrefix(e.URI, "/api/v1/namespaces/kube-system?") && !e.Time.Before(from) {
				out[i]++
			}
		}
	}
	return out
}

// probes runs n clients through the VIP at once, each a fresh connection
// and one request every `every` for d, and returns their samples.
func (c *realCluster) probes(t testing.TB, n int, d, every time.Duration) [][]lab.Sample {
	return c.probesOf(t, realServer, n, d, every)
}

// probesOf is probes to server, extra the client's own flags (-keep).
func (c *realCluster) probesOf(t testing.TB, server string, n int, d, every time.Duration, extra ...string) [][]lab.Sample {
	t.Helper()
	ps := make([]*lab.Process, n)
	for i := range ps {
		p, err := c.cp.StartProbe(c.client, server, d, append([]string{"-every", every.String()}, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		ps[i] = p
	}
	out := make([][]lab.Sample, n)
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Wait(d + 30*time.Second); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
			out[i] = lab.Samples(p)
		}()
	}
	wg.Wait()
	return out
}

func counts(ss [][]lab.Sample) (ok, failed int, firstErr string) {
	for _, s := range ss {
		o, f, e := lab.RequestCounts(s, time.Time{}, time.Now().Add(time.Hour))
		ok, failed = ok+o, failed+f
		if firstErr == "" {
			firstErr = e
		}
	}
	return ok, failed, firstErr
}

// spreadKillCost is what our SIGKILL on the holder may cost a client that
// sends one request at a time, every 10-20 ms, with spreading on.
const (
	spreadKillCost = 3
	spreadKillWhy  = "the request in flight through the killed proxy, and those whose connections the dying process's listener accepted while the kernel tore it down (the steering goes with the process, but not before: 35 ms of EOFs measured on a kubeadm node, 2 requests at 20 ms); the VIP never leaves"
)

// TestRealSpread: with spreading on, new connections through the VIP are
// spread over the three apiservers (issue 36: each within ±10 % of a
// third, counted by the apiservers' own audit logs); a backend whose
// apiserver is SIGKILLed gets no more connections and no client sees its
// refusal; started again, it takes its share again.
func TestRealSpread(t *testing.T) {
	c := newRealCluster(t, 3, lab.APIServerOptions{})
	c.extra = append(c.extra, spreadEnv(c)...)
	withStatus(c.cluster)
	c.startControlPlane(t)
	c.startAll(t)
	holder, _ := c.waitHolder(t, vip4, -1, 30*time.Second)
	waitLine(t, c.procs[holder], 0, "Spreading new connections to the VIP over the apiservers", "backends=3")
	for i := range c.nodes {
		if i != holder { // each backend checked healthy before the clients start
			waitLine(t, c.procs[holder], 0, "Backend health changed", "backend="+c.nodes[i].IPv4.Addr().String(), "state=healthy")
		}
	}

	// 30 clients, a request every 300 ms for 30 s each: 3000 new
	// connections. First to the holder's apiserver alone (the VIP without
	// spreading), then through the VIP.
	alone := "https://" + c.nodes[holder].IPv4.Addr().String() + ":6443"
	okAlone, failedAlone, firstErrAlone := counts(c.probesOf(t, alone, 30, 30*time.Second, 300*time.Millisecond))
	t.Logf("FIGURE spread: the same clients to the holder's apiserver alone: %d requests, %d failed (first error %q)",
		okAlone+failedAlone, failedAlone, firstErrAlone)
	start, loadFrom := time.Now(), c.lineCounts()
	ss := c.probes(t, 30, 30*time.Second, 300*time.Millisecond)
	ok, failed, firstErr := counts(ss)
	served := c.served(t, start)
	total := served[0] + served[1] + served[2]
	t.Logf("FIGURE spread: %d requests from 30 clients, each a new connection, served %v by n1, n2, n3 (holder %s); %d failed (first error %q)",
		total, served, c.nodes[holder].Name, failed, firstErr)
	// What fails here is the machine's load (client time-outs: 0 of 3000 in
	// one run, 5-8 % in others, all beside a stress run on this 2-core VM):
	// no more than one apiserver alone fails under the same clients, with
	// 1 % of the requests as margin for the load changing between the runs.
	if margin := (ok + failed) / 100; failed > failedAlone+margin {
		t.Errorf("%d of %d requests failed through the spreading VIP, %d of %d to one apiserver alone (margin %d)",
			failed, ok+failed, failedAlone, okAlone+failedAlone, margin)
	}
	for i, n := range served {
		if third := float64(total) / 3; math.Abs(float64(n)-third) > 0.1*third {
			t.Errorf("%s served %d of %d, want a third ±10 %%", c.nodes[i].Name, n, total)
		}
	}
	// The holder carried 3000 connections and kept advertising on time:
	// no node's election changed state under the proxied load.
	for i, p := range c.procs {
		for j := loadFrom[i]; j < p.Lines(); j++ {
			if l := p.Line(j); strings.Contains(l, `msg="VRRP state changed"`) {
				t.Errorf("%s's election changed under the proxied load: %s", c.nodes[i].Name, l)
			}
		}
	}

	victim := (holder + 1) % 3
	if err := c.cp.SignalAPIServer(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	ss = c.probes(t, 10, 5*time.Second, 50*time.Millisecond)
	ok, failed, firstErr = counts(ss)
	served = c.served(t, killed)
	st := readSpread(t, c.nodes[holder])
	t.Logf("FIGURE spread: %s's apiserver SIGKILLed: %d requests, %d failed (first error %q), served %v; holder's backends %+v",
		c.nodes[victim].Name, ok+failed, failed, firstErr, served, st.Spread)
	if failed > 0 {
		t.Errorf("%d requests failed after a backend's apiserver was killed: its refusal must be retried on another backend", failed)
	}
	if served[victim] != 0 {
		t.Errorf("the killed apiserver served %d", served[victim])
	}

	skip := c.procs[holder].Lines()
	if err := c.cp.StartAPIServer(victim); err != nil {
		t.Fatal(err)
	}
	if err := c.cp.WaitLive(victim, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	waitLineWithin(t, c.procs[holder], 20*time.Second, skip, "Backend health changed", "backend="+c.nodes[victim].IPv4.Addr().String(), "state=healthy")
	back := time.Now()
	ss = c.probes(t, 10, 5*time.Second, 100*time.Millisecond)
	_, failed, firstErr = counts(ss)
	served = c.served(t, back)
	t.Logf("FIGURE spread: %s's apiserver back: served %v, %d failed (first error %q)", c.nodes[victim].Name, served, failed, firstErr)
	if served[victim] == 0 {
		t.Errorf("the restarted apiserver of %s took no connection: %v", c.nodes[victim].Name, served)
	}
	if failed > 0 {
		t.Errorf("%d requests failed after the backend returned", failed)
	}

	// The other backend's link cut: its SYNs go unanswered, so each
	// connection the holder gives it is dialled for 250 ms and carried to
	// another backend, and after its first failed dial it gets none until
	// a check of it passes. No client sees it (issue 36: one backend's link
	// cut, failed ≤ today's, none).
	// Not the etcd leader's node: cut off, the leader would cost the
	// cluster an election (1 s), and the probe's reads would wait on it.
	cut := (holder + 2) % 3
	if c.etcdLeader() == c.nodes[cut].Name {
		cut = (holder + 1) % 3
	}
	addr := c.nodes[cut].IPv4.Addr().String()
	before := backendOf(readSpread(t, c.nodes[holder]), addr)
	skip = c.procs[holder].Lines()
	if err := c.nodes[cut].SetSwitchPort(false); err != nil {
		t.Fatal(err)
	}
	cutAt := time.Now()
	ss = c.probes(t, 10, 5*time.Second, 50*time.Millisecond)
	ok, failed, firstErr = counts(ss)
	after := backendOf(readSpread(t, c.nodes[holder]), addr)
	down := lineAt(t, c.procs[holder], waitLineWithin(t, c.procs[holder], 10*time.Second, skip, "Backend health changed", "backend="+addr, "state=unhealthy"))
	t.Logf("FIGURE spread: %s's link cut: %d requests, %d failed (first error %q); it took %d connections, %d dials to it went unanswered (250 ms each), each connection carried to another backend; its check unhealthy after %v",
		c.nodes[cut].Name, ok+failed, failed, firstErr, after.Connections-before.Connections, after.DialFailures-before.DialFailures,
		down.Sub(cutAt).Round(time.Millisecond))
	if failed > 0 {
		t.Errorf("%d requests failed while a backend's link was cut: an unanswered dial must be carried to another backend", failed)
	}
	if err := c.nodes[cut].SetSwitchPort(true); err != nil {
		t.Fatal(err)
	}
	waitLineWithin(t, c.procs[holder], 60*time.Second, skip, "Backend health changed", "backend="+addr, "state=healthy")

	// Our daemon SIGKILLed on the holder: the kernel detaches the steering
	// with the process, the VIP stays bound (the backups wait while the
	// holder's host answers), so the local apiserver serves the VIP alone
	// until the daemon is back and spreads again. Run outside systemd (as
	// a static pod is), it has no descriptor store: the long-lived
	// connections it carries end with it (under systemd they are adopted:
	// TestKubeadmSystemdL2).
	watches := openLongLived(t, c.client, netip.AddrPortFrom(vip4.Addr(), 6443).String(), longLivedConns)
	c.procs[holder].Kill()
	killedAt := time.Now()
	probe, err := c.cp.StartProbe(c.client, realServer, 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the kubelet's or systemd's restart
	if err := c.restart(holder); err != nil {
		t.Fatal(err)
	}
	waitLine(t, c.procs[holder], 0, "Spreading new connections to the VIP over the apiservers")
	if _, err := probe.Wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	served = c.served(t, killedAt)
	// The request in flight through the killed proxy is cut with it; a
	// probe sends one at a time.
	failedAtMost(t, probe, killedAt, fmt.Sprintf("spread: holder's daemon SIGKILLed and restarted 1.5 s later (served %v)", served), spreadKillCost, spreadKillWhy)
	if hs, _ := c.holders(vip4); len(hs) != 1 || hs[0] != holder {
		t.Errorf("holders %v after our daemon's restart, want %s to have kept the VIP", c.names(hs), c.nodes[holder].Name)
	}
	n, err := watches.cut(t)
	t.Logf("spread: our SIGKILL outside systemd cut %d of %d long-lived connections through the VIP (%v)", n, longLivedConns, err)
	if n != longLivedConns {
		t.Errorf("our SIGKILL outside systemd cut %d of %d long-lived connections, want all: docs/architecture.md says a static pod's carried connections end with the process; if they no longer do, say so there", n, longLivedConns)
	}
	c.frozenSpreading(t, holder)
}

// frozenSpreading freezes our daemon on the holder (SIGSTOP: a frozen
// cgroup, a starved CPU quota) under a client sending a request every
// 20 ms, each on a new connection with a 1 s time-out. The steering runs on
// a lease the daemon renews (1 s): once it has run out, new connections
// reach the local apiserver as without spreading, instead of the frozen
// proxy's backlog.
//   - 1 s: the VIP stays; at most one request fails (spreading off: none),
//     the one whose connection the frozen proxy's listener took.
//   - 10 s: the VIP's lifetime lapses (2.25-3.2 s after the freeze), a
//     backup takes over, and the thawed daemon steps back. At most two
//     fail: the one in the frozen proxy's backlog, and one SYN sent while
//     the VIP moved (spreading off: that one). On fb2b4e5's build every
//     connection stalled in the frozen proxy until a backup took over, and
//     the frozen host kept the VIP bound beside it.
func (c *realCluster) frozenSpreading(t *testing.T, holder int) {
	for _, tt := range []struct {
		freeze time.Duration
		bound  int
		why    string
	}{
		{time.Second, 1, "the request whose connection the frozen proxy's listener took before the steering's lease ran out"},
		{10 * time.Second, 2, "that one, and one connection made while the VIP moved (its SYN retransmitted after 1 s)"},
	} {
		h, _ := c.waitHolder(t, vip4, -1, 30*time.Second)
		waitLine(t, c.procs[h], 0, "Spreading new connections to the VIP over the apiservers")
		probe, err := c.cp.StartProbe(c.client, realServer, tt.freeze+6*time.Second, "-every", "20ms")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		stoppedAt := time.Now()
		if err := c.procs[h].Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(tt.freeze)
		if err := c.procs[h].Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if _, err := probe.Wait(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		failedAtMost(t, probe, stoppedAt, fmt.Sprintf("spread: holder's daemon SIGSTOPped for %s", tt.freeze), tt.bound, tt.why)
		if hs, _ := c.holders(vip4); len(hs) != 1 {
			t.Errorf("holders %v after the freeze, want one", c.names(hs))
		}
	}
}

// seedConfigMaps creates n ConfigMaps of 100 kB in default, named
// prefix-1 to prefix-n, once (the last one there: all are).
func (c *realCluster) seedConfigMaps(prefix string, n int) error {
	url := "https://" + c.nodes[0].IPv4.Addr().String() + ":6443/api/v1/namespaces/default/configmaps"
	script := fmt.Sprintf(`set -e
if curl -sf --cacert %[1]s -H 'Authorization: Bearer %[2]s' %[3]s/%[5]s-%[4]d -o /dev/null; then exit 0; fi
v=$(head -c 75000 /dev/zero | base64 -w0)
for i in $(seq 1 %[4]d); do
  printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%[5]s-%%d"},"data":{"v":"%%s"}}' $i "$v" |
    curl -s --cacert %[1]s -H 'Authorization: Bearer %[2]s' -H 'Content-Type: application/json' -X POST --data-binary @- %[3]s -o /dev/null
done`, c.cp.PKI.CAFile, c.cp.AdminToken, url, n, prefix)
	_, err := c.client.Exec("sh", "-c", script)
	return err
}
