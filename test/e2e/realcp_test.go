package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// realCluster is a cluster whose nodes run a real stacked control plane
// (etcd member + kube-apiserver each) instead of stand-in apiservers.
type realCluster struct {
	*cluster
	cp *lab.ControlPlane
}

// realEnv is the daemon's health settings against a real apiserver on a
// loaded 2-core VM: a /livez answer can take a few hundred milliseconds.
var realEnv = []string{"NOVAEDGE_CP_VIP_HEALTH_INTERVAL=250ms", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=1s",
	"NOVAEDGE_CP_VIP_LOG_LEVEL=debug"}

// realServer is the apiserver URL through the IPv4 VIP.
var realServer = "https://" + vip4.Addr().String() + ":6443"

func realBinaries(t testing.TB) lab.RealBinaries {
	t.Helper()
	b, err := lab.RealBinariesFromEnv()
	needBuilt(t, err)
	return b
}

// needBuilt skips a test whose lab programs are not built (make realcp),
// except in CI, where it fails.
func needBuilt(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip(err)
}

func newRealCluster(t testing.TB, n int, opts lab.APIServerOptions, extra ...string) *realCluster {
	return newRealClusterOf(t, n, []netip.Addr{vip4.Addr(), vip6.Addr()}, opts, extra...)
}

// newRealClusterOf is newRealCluster with the VIPs the serving certificates name.
func newRealClusterOf(t testing.TB, n int, vips []netip.Addr, opts lab.APIServerOptions, extra ...string) *realCluster {
	t.Helper()
	bin := realBinaries(t)
	c := newClusterOf(t, n, false, append(append([]string{}, realEnv...), extra...)...)
	cp, err := lab.NewControlPlane(c.Lab, bin, c.nodes, vips, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The token goes only over a connection the cluster CA verified.
	c.extra = append(c.extra, "NOVAEDGE_CP_VIP_CA_FILE="+cp.PKI.CAFile)
	t.Cleanup(func() {
		if t.Failed() {
			for i := range c.nodes {
				if p := cp.APIServer(i); p != nil {
					t.Logf("kube-apiserver %s, last lines:\n%s", c.nodes[i].Name, tail(p.Output(), 15))
				}
			}
		}
	})
	return &realCluster{cluster: c, cp: cp}
}

// startControlPlane starts every etcd member and apiserver and waits until
// every /livez answers 200.
func (c *realCluster) startControlPlane(t testing.TB) {
	t.Helper()
	if err := c.cp.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range c.nodes {
		if err := c.cp.WaitLive(i, 120*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFirstOK waits up to d for the client's first successful request sent
// at or after from, and returns when its answer came.
// requestFigure writes a FIGURE line of what the client saw since since —
// failed and succeeded requests, the first error, the outage — and returns
// the number that failed.
func requestFigure(t testing.TB, probe *lab.Process, since time.Time, what string) int {
	t.Helper()
	ss, now := lab.Samples(probe), time.Now()
	ok, failed, firstErr := lab.RequestCounts(ss, since, now)
	figure(t, fmt.Sprintf("%s: %d requests failed, %d succeeded (first error %q); client outage", what, failed, ok, firstErr),
		lab.FailedSpan(ss, since, now))
	return failed
}

// failedAtMost is requestFigure that fails the test when more than bound
// requests failed; why says where the bound comes from and its margin.
func failedAtMost(t testing.TB, probe *lab.Process, since time.Time, what string, bound int, why string) {
	t.Helper()
	if failed := requestFigure(t, probe, since, what); failed > bound {
		t.Errorf("%s: %d requests failed, at most %d (%s)", what, failed, bound, why)
	}
}

func waitFirstOK(t testing.TB, p *lab.Process, from time.Time, d time.Duration) time.Time {
	t.Helper()
	at, err := lab.FirstOK(p, from, d)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

var (
	logTime   = regexp.MustCompile(`time=(\S+)`)
	logReason = regexp.MustCompile(`reason="([^"]*)"|reason=(\S+)`)
	logStatus = regexp.MustCompile(`status=(\d+)`)
)

// healthTimeline is what the daemon's checker saw, from its debug log, as
// phases relative to since: "+1.25s status 403 ×4".
func healthTimeline(p *lab.Process, since time.Time) []string {
	var out []string
	last, n, start := "", 0, time.Duration(0)
	flush := func() {
		if n > 0 {
			out = append(out, fmt.Sprintf("%+.2fs %s ×%d", start.Seconds(), last, n))
		}
	}
	for _, l := range strings.Split(p.Output(), "\n") {
		var what string
		switch {
		case strings.Contains(l, `msg="Health check failed"`):
			m := logReason.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			what = m[1] + m[2]
		case strings.Contains(l, `msg="API server health changed"`) && strings.Contains(l, "state=healthy"):
			what = "healthy"
			if m := logStatus.FindStringSubmatch(l); m != nil {
				what += " (" + m[1] + ")"
			}
		default:
			continue
		}
		at, ok := logLineTime(l)
		if !ok {
			continue
		}
		if what != last {
			flush()
			last, n, start = what, 0, at.Sub(since)
		}
		n++
		if strings.HasPrefix(what, "healthy") {
			break
		}
	}
	flush()
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestRealBootstrapFromNothing: as on a kubeadm node, our daemons start
// before anything else exists (no token, no etcd, no apiserver). The VIP is
// bound only once /livez says 200: not in the apiserver's 403 (RBAC
// bootstrap roles not in yet) and 500 (post-start hooks) phases.
func TestRealBootstrapFromNothing(t *testing.T) {
	testRealBootstrap(t, lab.APIServerOptions{}, 200)
}

// TestRealBootstrapAnonymousAuthOff: with --anonymous-auth=false the
// apiserver answers 401 as soon as its port is open, and with no token file
// 401 is healthy: the VIP is bound from the moment the port opens.
func TestRealBootstrapAnonymousAuthOff(t *testing.T) {
	testRealBootstrap(t, lab.APIServerOptions{AnonymousAuthOff: true}, 401)
}

func testRealBootstrap(t *testing.T, opts lab.APIServerOptions, healthyStatus int) {
	c := newRealCluster(t, 3, opts)
	c.startAll(t)
	if h, _ := c.holders(vip4); len(h) != 0 {
		t.Fatalf("VIP held by %v before any apiserver exists", c.names(h))
	}
	probe, err := c.cp.StartProbe(c.client, realServer, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // our daemons see nothing for a while
	for i := range c.nodes {
		if err := c.cp.StartEtcd(i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.nodes {
		if err := c.cp.StartAPIServer(i); err != nil {
			t.Fatal(err)
		}
	}
	holder, _ := c.waitHolder(t, vip4, -1, 2*time.Minute)
	started := c.cp.Started(holder)
	bound := waitLine(t, c.procs[holder], 0, "Control-plane VIP bound", vip4.String())
	first := waitFirstOK(t, probe, started, 2*time.Minute)
	figure(t, fmt.Sprintf("real bootstrap (anonymous-auth=%t): holder's apiserver start to the client's first successful request through the VIP", !opts.AnonymousAuthOff), first.Sub(started))
	timeline := healthTimeline(c.procs[holder], started)
	t.Logf("FIGURE real bootstrap (anonymous-auth=%t): /livez as %s's checker saw it, from its apiserver's start: %s",
		!opts.AnonymousAuthOff, c.nodes[holder].Name, strings.Join(timeline, ", "))
	healthy := waitLine(t, c.procs[holder], 0, "API server health changed", "state=healthy")
	if healthy > bound {
		t.Fatalf("VIP bound (line %d) before the first healthy verdict (line %d)", bound, healthy)
	}
	if want := fmt.Sprintf("status=%d", healthyStatus); !strings.Contains(c.procs[holder].Line(healthy), want) {
		t.Fatalf("first healthy verdict %q, want %s", c.procs[holder].Line(healthy), want)
	}
	if healthyStatus == 200 {
		for _, phase := range timeline {
			if strings.Contains(phase, "status 401") {
				t.Fatalf("a real apiserver with anonymous auth answered 401: %v", timeline)
			}
		}
	}
}

// logLineTime is the time= field of one of our daemon's log lines.
func logLineTime(l string) (time.Time, bool) {
	m := logTime.FindStringSubmatch(l)
	if m == nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, m[1])
	return at, err == nil
}
