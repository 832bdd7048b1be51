package e2e

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// TestReloadKeepsTheVIP: SIGHUP (`systemctl reload`) re-reads the env file
// as systemd runs us (EnvironmentFile= and --env-file): live settings are
// applied, a change that needs a restart is named and left, a broken file
// keeps the running configuration; the client counting through the VIP sees
// no failure and no node ever joins the holder.
func TestReloadKeepsTheVIP(t *testing.T) {
	c := newCluster(t, 2, v4only)
	files := make([]string, 2)
	for i := range 2 {
		c.env[i] = []string{"NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450"}
		files[i] = filepath.Join(t.TempDir(), "cpvip.env")
		c.args[i] = []string{"--env-file", files[i]}
		writeEnv(t, files[i], c.nodeEnv(i))
	}
	c.startAll(t)
	h, _ := c.waitHolder(t, vip4, -1, 15*time.Second)
	b := 1 - h
	pr := startProber(c.client, netip.AddrPortFrom(vip4.Addr(), 6443))
	if err := lab.Eventually(10*time.Second, func() error { return pr.steady(500 * time.Millisecond) }); err != nil {
		t.Fatal(err)
	}
	mon := c.monitor(t, vip4)
	from := time.Now()
	reload := func(i int, extra ...string) int {
		t.Helper()
		writeEnv(t, files[i], append(c.nodeEnv(i), extra...))
		skip := c.procs[i].Lines()
		if err := c.procs[i].Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		return skip
	}

	// The holder: live values and one that needs a restart.
	skip := reload(h, "NOVAEDGE_CP_VIP_HEALTH_INTERVAL=200ms", "NOVAEDGE_CP_VIP_LOG_LEVEL=debug", "NOVAEDGE_CP_VIP_VRID=52")
	waitLine(t, c.procs[h], skip, "Reload: these need a restart and were left as they were", "NOVAEDGE_CP_VIP_VRID")
	waitLine(t, c.procs[h], skip, "Configuration reloaded", "NOVAEDGE_CP_VIP_HEALTH_INTERVAL", "NOVAEDGE_CP_VIP_LOG_LEVEL")
	waitLine(t, c.procs[h], skip, "Health check timing changed", "interval=200ms")
	waitLine(t, c.procs[h], skip, "level=DEBUG") // the new level is in force

	// A broken file: nothing changes.
	skip = reload(h, "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=1000h")
	waitLine(t, c.procs[h], skip, "Reload failed: keeping the running configuration", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT")
	c.stayOne(t, vip4, 2*time.Second)
	_, metrics, err := c.nodes[h].HTTPGet("http://127.0.0.1:9450/metrics")
	for _, want := range []string{`novaedge_cpvip_config_reloads_total{result="ok"} 1`, `novaedge_cpvip_config_reloads_total{result="refused"} 1`} {
		if err != nil || !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s (%v):\n%s", want, err, grepLines(metrics, "config_reloads"))
		}
	}
	failed := failedSince(pr, from)
	t.Logf("FIGURE failed connects (every 10 ms) over a reload with live changes and one with a broken file: %d", failed)
	if double, most := mon.stop(); failed > 0 || most > 1 {
		t.Errorf("reloads: %d failed connects, %d holders at once (%s)", failed, most, double)
	}
	if hs, _ := c.holders(vip4); len(hs) != 1 || hs[0] != h {
		t.Fatalf("holders %v after the reloads, want %s", c.names(hs), c.nodes[h].Name)
	}

	// The backup: a higher priority with preempt, applied live, takes the
	// VIP by the usual rules (make before break).
	mon = c.monitor(t, vip4)
	moved := time.Now()
	skip = reload(b, "NOVAEDGE_CP_VIP_PRIORITY=150", "NOVAEDGE_CP_VIP_PREEMPT=true")
	waitLine(t, c.procs[b], skip, "Configuration reloaded", "NOVAEDGE_CP_VIP_PREEMPT", "NOVAEDGE_CP_VIP_PRIORITY")
	if got, _ := c.waitHolder(t, vip4, h, 15*time.Second); got != b {
		t.Fatalf("holder %s, want %s after its priority rose", c.nodes[got].Name, c.nodes[b].Name)
	}
	c.reach(t, vip4.Addr(), b)
	double, _ := mon.stop()
	figure(t, "two holders while the reloaded backup preempts (make before break)", double)
	failed = failedSince(pr, moved)
	t.Logf("FIGURE failed connects while the reloaded backup preempts: %d", failed)
	if double > makeBeforeBreak || failed > 1 {
		t.Errorf("preempting after a reload: two holders %s (at most %s), %d failed connects (at most 1: the connect in flight as the neighbours switch MAC; 0 measured)", double, makeBeforeBreak, failed)
	}
	pr.stop()
	for i := range 2 {
		if _, err := c.procs[i].Wait(0); err == nil {
			t.Errorf("%s exited on SIGHUP", c.nodes[i].Name)
		}
	}
}

// writeEnv writes an env file of KEY=VALUE lines.
func writeEnv(t *testing.T, path string, env []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(env, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// failedSince counts the prober's failed connects started at or after from.
func failedSince(p *prober, from time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, t := range p.tries {
		if !t.ok && !t.at.Before(from) {
			n++
		}
	}
	return n
}
