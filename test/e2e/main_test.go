// Package e2e runs the real novaedge-cpvip binary in network-namespace labs.
// It needs root (namespaces, CAP_NET_ADMIN) and skips otherwise.
package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// binary is the novaedge-cpvip built once for the whole run.
var binary string

func TestMain(m *testing.M) {
	if spec := os.Getenv(floodEnv); spec != "" { // this binary run as TestSpreadFlood's client
		os.Exit(flood(spec))
	}
	if os.Geteuid() != 0 {
		fmt.Println("e2e: skipped, needs root for network namespaces")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "cpvip-e2e")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "novaedge-cpvip")
	// Built as `make build` and the packages build it (static, stripped), so
	// that footprint figures are of what is shipped.
	// NOVAEDGE_E2E_BINARY runs the tests against another build (an earlier
	// commit's, for a before/after figure).
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binary, "../../cmd/novaedge-cpvip")
	if other := os.Getenv("NOVAEDGE_E2E_BINARY"); other != "" {
		build = exec.Command("cp", other, binary)
	}
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Printf("building the binary: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	vip4     = netip.MustParsePrefix("192.0.2.100/32")
	vip6     = netip.MustParsePrefix("2001:db8::100/128")
	wrongMAC = "02:00:00:00:00:99"
)

// l2Lab is one node with a stand-in apiserver and one client on a switch.
type l2Lab struct {
	*lab.Lab
	node, client *lab.Host
	api          *lab.APIServer
	tokenPath    string
}

func newL2Lab(t *testing.T) *l2Lab {
	t.Helper()
	l, err := lab.New(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	node, err := l.AddHost("n1", netip.MustParsePrefix("192.0.2.11/24"), netip.MustParsePrefix("2001:db8::11/64"), true)
	if err != nil {
		t.Fatal(err)
	}
	client, err := l.AddHost("cl", netip.MustParsePrefix("192.0.2.2/24"), netip.MustParsePrefix("2001:db8::2/64"), false)
	if err != nil {
		t.Fatal(err)
	}
	api, err := node.StartAPIServer(6443)
	if err != nil {
		t.Fatal(err)
	}
	return &l2Lab{Lab: l, node: node, client: client, api: api, tokenPath: filepath.Join(t.TempDir(), "token")}
}

// env is the daemon's environment: both VIPs, fast health checks, and extra
// KEY=VALUE pairs that override.
func (l *l2Lab) env(extra ...string) []string {
	env := map[string]string{
		"NOVAEDGE_CP_VIP_ADDRESS":         vip4.String() + "," + vip6.String(),
		"NOVAEDGE_CP_VIP_HEALTH_INTERVAL": "100ms",
		"NOVAEDGE_CP_VIP_HEALTH_TIMEOUT":  "300ms",
		"NOVAEDGE_CP_VIP_FAIL_THRESHOLD":  "3",
		"NOVAEDGE_CP_VIP_SA_TOKEN_PATH":   l.tokenPath,
		"NOVAEDGE_CP_VIP_METRICS_ADDR":    "",
		"NOVAEDGE_CP_VIP_ADVERT_INTERVAL": "100ms",
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func (l *l2Lab) start(t *testing.T, extra ...string) *lab.Process {
	t.Helper()
	p, err := l.node.Start("cpvip", l.env(extra...), binary, "run")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitVIP waits until the node holds (or does not hold) p and returns how long it took.
func (l *l2Lab) waitVIP(t *testing.T, p netip.Prefix, held bool, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	err := lab.Eventually(within, func() error {
		_, ok, err := l.node.Has(p)
		if err != nil {
			return err
		}
		if ok != held {
			return fmt.Errorf("%s held=%v, want %v", p, ok, held)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// figure logs a measured value in a form the issue note collects (grep FIGURE).
func figure(t testing.TB, name string, d time.Duration) {
	t.Helper()
	t.Logf("FIGURE %s: %s", name, d.Round(time.Millisecond))
}

func waitLine(t testing.TB, p *lab.Process, skip int, parts ...string) int {
	t.Helper()
	return waitLineWithin(t, p, 10*time.Second, skip, parts...)
}

// waitLineWithin is waitLine for a line whose cause takes longer than 10 s
// by design (say so where it is called).
func waitLineWithin(t testing.TB, p *lab.Process, d time.Duration, skip int, parts ...string) int {
	t.Helper()
	i, err := p.WaitLine(d, skip, parts...)
	if err != nil {
		t.Fatalf("%v\noutput:\n%s", err, p.Output())
	}
	return i
}
