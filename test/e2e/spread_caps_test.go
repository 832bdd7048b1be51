package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpreadCapabilities: spreading asked for under the default unit's two
// capabilities cannot load its sk_lookup program; the daemon says why and
// how to grant it, and the VIP works as without spreading. With CAP_BPF
// added (packaging/spread.conf) the VIP's connections go through our
// proxy, to the local apiserver here (the listed peer has none).
func TestSpreadCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name string
		caps string
		line []string
	}{
		{"without CAP_BPF", "net_admin,+net_raw", []string{"Cannot spread connections", "CAP_BPF"}},
		{"with CAP_BPF", "net_admin,+net_raw,+bpf", []string{"Spreading new connections to the VIP over the apiservers", "backends=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newL2Lab(t)
			args := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
				"--inh-caps=-all,+" + tc.caps, "--ambient-caps=-all,+" + tc.caps, "--bounding-set=-all,+" + tc.caps, "--no-new-privs", binary, "run"}
			p, err := l.node.Start("cpvip", l.env("NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450", "NOVAEDGE_CP_VIP_SA_TOKEN_PATH=/nonexistent/token",
				"NOVAEDGE_CP_VIP_SPREAD=true", "NOVAEDGE_CP_VIP_SPREAD_BACKENDS=192.0.2.11,192.0.2.12"), args...)
			if err != nil {
				t.Fatal(err)
			}
			waitLine(t, p, 0, tc.line...)
			l.waitVIP(t, vip4, true, 15*time.Second)
			l.waitVIP(t, vip6, true, 15*time.Second)
			waitLine(t, p, 0, "API server health changed", "state=healthy")
			for _, vip := range []string{"192.0.2.100", "2001:db8::100"} {
				if who, err := l.client.Whoami(mustAddr(vip), 6443, 5*time.Second); err != nil || who != "n1" {
					t.Errorf("client via %s: %q %v", vip, who, err)
				}
			}
			st := readSpread(t, l.node)
			t.Logf("backends: %+v", st.Spread)
			carried := len(st.Spread) == 2 && st.Spread[0].Local && st.Spread[0].Connections >= 2
			if want := strings.Contains(tc.caps, "bpf"); carried != want {
				t.Errorf("the proxy carried the client's connections: %v, want %v", carried, want)
			}
			// The program attached, CAP_BPF is dropped from every thread: a
			// flaw reached through the proxy cannot load another.
			if eff, prm := capsOf(t, p.PID()); eff&capBPF != 0 || prm&capBPF != 0 {
				t.Errorf("the daemon keeps CAP_BPF (effective %#x, permitted %#x)", eff, prm)
			}
			if !carried {
				return
			}
			// Without CAP_BPF the lease is still renewed (through the map's
			// memory, no bpf call): 3 s on, past the lease, a connection is
			// still carried.
			time.Sleep(3 * time.Second)
			before := readSpread(t, l.node).Spread[0].Connections
			if who, err := l.client.Whoami(mustAddr("192.0.2.100"), 6443, 5*time.Second); err != nil || who != "n1" {
				t.Errorf("client via the VIP 3 s later: %q %v", who, err)
			}
			if after := readSpread(t, l.node).Spread[0].Connections; after <= before {
				t.Errorf("a connection 3 s after the drop went around the proxy (%d carried before, %d after): the lease was not renewed", before, after)
			}
			if i, err := p.WaitLine(0, 0, "Renewing the steering failed"); err == nil {
				t.Errorf("%s", p.Line(i))
			}
		})
	}
}

// capBPF is CAP_BPF's bit in /proc/PID/status.
const capBPF = 1 << 39

// capsOf returns the effective and permitted capabilities of every thread
// of process pid, or-ed together.
func capsOf(t *testing.T, pid int) (eff, prm uint64) {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			var v uint64
			if _, err := fmt.Sscanf(line, "CapEff: %x", &v); err == nil {
				eff |= v
			}
			if _, err := fmt.Sscanf(line, "CapPrm: %x", &v); err == nil {
				prm |= v
			}
		}
	}
	return eff, prm
}

// floodConns is how many idle connections TestSpreadFlood opens, from a
// process of their own in the client's namespace (this test binary run
// with floodEnv): the stand-in apiservers are in this process, which holds
// their ends, and a process's descriptors may be limited to 20 000.
const floodConns = 10000

// floodEnv makes this test binary the flood's client: ADDRESS,COUNT.
const floodEnv = "NOVAEDGE_E2E_FLOOD"

// flood opens count connections to address (spec "ADDRESS,COUNT"), says
// "opened COUNT" and holds them, sending nothing, until it is killed.
func flood(spec string) int {
	addr, n, ok := strings.Cut(spec, ",")
	count, err := strconv.Atoi(n)
	if !ok || err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: want ADDRESS,COUNT\n", floodEnv, spec)
		return 2
	}
	conns := make([]net.Conn, 0, count)
	for range count {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			fmt.Printf("connection %d: %v\n", len(conns)+1, err)
			return 1
		}
		conns = append(conns, c)
	}
	fmt.Printf("opened %d\n", len(conns))
	time.Sleep(24 * time.Hour) // killed by the test
	return 0
}

// maxFloodRSS is the daemon's resident memory that a flood of idle
// connections must stay under: its idle 12-20 MiB, and the connections
// awaiting an answer up to the cap (1024 × about 50 KiB), with room for the
// Go heap's growth.
const maxFloodRSS = 150 << 10 // KiB

// TestSpreadFlood: one client opens 10 000 connections to VIP:6443 and sends
// nothing. Past 1024 awaiting their first answer the holder pauses its
// steering (new connections reach the local apiserver, as without
// spreading), its memory stays bounded, no node's election changes and no
// health check fails; the flood gone, spreading resumes. fb2b4e5's build
// had no cap: every connection held its buffers and goroutines in the
// daemon (about 50 KiB each).
func TestSpreadFlood(t *testing.T) {
	c := newCluster(t, 2, "NOVAEDGE_CP_VIP_SPREAD=true", "NOVAEDGE_CP_VIP_SPREAD_BACKENDS=192.0.2.11,192.0.2.12",
		"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=200ms")
	c.startAll(t)
	h := c.settledHolder(t, vip4, -1, 15*time.Second)
	waitLine(t, c.procs[h], 0, "Spreading new connections to the VIP over the apiservers")
	from := make([]int, len(c.procs))
	for i, p := range c.procs {
		from[i] = p.Lines()
	}
	flooder, err := c.client.Start("flood", []string{fmt.Sprintf("%s=192.0.2.100:6443,%d", floodEnv, floodConns)}, os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flooder.WaitLine(2*time.Minute, 0, fmt.Sprintf("opened %d", floodConns)); err != nil {
		t.Fatalf("the flood's client: %v\n%s", err, flooder.Output())
	}
	waitLine(t, c.procs[h], from[h], "Spreading paused", "max_awaiting_answer=1024")
	time.Sleep(3 * time.Second) // health checks and advertisements under the flood
	rss := rssKiB(t, c.procs[h].PID())
	t.Logf("FIGURE spread: %d idle connections from one client: the holder's RSS %d KiB", floodConns, rss)
	if rss > maxFloodRSS {
		t.Errorf("the holder's RSS is %d KiB under the flood, want at most %d", rss, maxFloodRSS)
	}
	if who, err := c.client.Whoami(vip4.Addr(), 6443, 5*time.Second); err != nil || who != c.nodes[h].Name {
		t.Errorf("a request through the VIP under the flood: %q %v", who, err)
	}
	for i, p := range c.procs {
		for j := from[i]; j < p.Lines(); j++ {
			if l := p.Line(j); strings.Contains(l, `msg="VRRP state changed"`) || strings.Contains(l, `msg="Health check failed"`) {
				t.Errorf("%s under the flood: %s", c.nodes[i].Name, l)
			}
		}
	}
	_ = flooder.Signal(syscall.SIGKILL)
	_, _ = flooder.Wait(10 * time.Second)
	waitLine(t, c.procs[h], from[h], "Spreading resumed")
}

// rssKiB is process pid's resident set (VmRSS).
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var v int
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &v); err == nil {
			return v
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}
