package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// TestStartWaitsForTheInterface: an interface created after the daemon
// started (a bond, a VLAN, a renamed NIC at boot) is waited for, and the
// VIP is bound once it is there.
func TestStartWaitsForTheInterface(t *testing.T) {
	l := newL2Lab(t)
	if err := l.node.DeleteLink(); err != nil {
		t.Fatal(err)
	}
	p := l.start(t, "NOVAEDGE_CP_VIP_INTERFACE=eth0")
	waitLine(t, p, 0, "Waiting for the host", "interface eth0")
	time.Sleep(10 * time.Second)
	if _, err := p.Wait(0); err == nil {
		t.Fatalf("the daemon exited while the interface was missing:\n%s", p.Output())
	}
	created := time.Now()
	if err := l.node.CreateLink(); err != nil {
		t.Fatal(err)
	}
	l.waitVIP(t, vip4, true, 15*time.Second)
	l.waitVIP(t, vip6, true, 15*time.Second)
	figure(t, "VIP bound after the interface was created 10 s after start", time.Since(created))
}

// TestMetricsPortTakenDoesNotStopTheVIP: another process holds the metrics
// port at start; the VIP is bound all the same, and the endpoint is served
// once the port is free.
func TestMetricsPortTakenDoesNotStopTheVIP(t *testing.T) {
	l := newL2Lab(t)
	squatter, err := l.node.StartAPIServer(9450) // listens on every address of the node
	if err != nil {
		t.Fatal(err)
	}
	p := l.start(t, "NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450")
	waitLine(t, p, 0, "Cannot listen for metrics and status, retrying")
	l.waitVIP(t, vip4, true, 15*time.Second)
	if err := squatter.Set(lab.Down); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	err = lab.Eventually(45*time.Second, func() error {
		out, err := l.node.Exec("curl", "-sf", "--max-time", "1", "http://127.0.0.1:9450/metrics")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "novaedge_cpvip_vip_held") {
			return fmt.Errorf("not our metrics")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	figure(t, "metrics served after the port was freed (retry 1 s doubling to 30 s)", time.Since(freed))
}

// TestSubnetPrefixChecks: a VIP prefix that would change the host's routes
// is refused at start with exit 2 naming the variable: in bgp mode anything
// but a host route, in L2 a subnet prefix that is not the interface's.
func TestSubnetPrefixChecks(t *testing.T) {
	l := newL2Lab(t)
	bgp := []string{"NOVAEDGE_CP_VIP_MODE=bgp", "NOVAEDGE_BGP_LOCAL_AS=65001", "NOVAEDGE_BGP_ROUTER_ID=192.0.2.11",
		"NOVAEDGE_BGP_PEER_ADDRESS=192.0.2.1", "NOVAEDGE_BGP_PEER_AS=65000"}
	for _, env := range [][]string{
		append([]string{"NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/24"}, bgp...),
		{"NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/25"},
		{"NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/16"},
	} {
		p := l.start(t, env...)
		code, err := p.Wait(10 * time.Second)
		if err != nil || code != 2 {
			t.Fatalf("%v: exit %d (%v), want 2\n%s", env, code, err, p.Output())
		}
		if out := p.Output(); !strings.Contains(out, "NOVAEDGE_CP_VIP_ADDRESS") {
			t.Errorf("%v: output %q does not name the variable", env, out)
		}
		out, _ := l.node.Exec("ip", "-4", "route", "show")
		if strings.Contains(out, "192.0.2.0/25") || strings.Contains(out, "192.0.0.0/16") {
			t.Errorf("%v: a route was added:\n%s", env, out)
		}
	}
	// The interface's own subnet prefix is fine: bound, no route added.
	before, _ := l.node.Exec("ip", "-4", "route", "show")
	p := l.start(t, "NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/24")
	l.waitVIP(t, mustPrefix("192.0.2.100/24"), true, 15*time.Second)
	if after, _ := l.node.Exec("ip", "-4", "route", "show"); after != before {
		t.Errorf("routes changed:\n%s\nwas\n%s", after, before)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(10 * time.Second); err != nil || code != 0 {
		t.Fatalf("stop: exit %d (%v)", code, err)
	}
}
