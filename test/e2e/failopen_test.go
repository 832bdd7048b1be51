package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// failOpenStatus is the part of `status -o json` these tests read.
type failOpenStatus struct {
	FailOpen struct {
		Enabled  bool   `json:"enabled"`
		InForce  bool   `json:"in_force"`
		Reason   string `json:"reason"`
		Priority int    `json:"vrrp_priority"`
	} `json:"fail_open"`
}

func readFailOpen(t testing.TB, h *lab.Host) failOpenStatus { return readStatus[failOpenStatus](t, h) }

// readStatus reads the part of h's `status -o json` that T names.
func readStatus[T any](t testing.TB, h *lab.Host) T {
	t.Helper()
	var s T
	js, err := h.Exec(binary, "status", "-o", "json")
	if err != nil {
		t.Fatalf("%s: status: %v", h.Name, err)
	}
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatalf("%s: status JSON: %v\n%s", h.Name, err, js)
	}
	return s
}

// withStatus serves status on every node of c.
func withStatus(c *cluster) {
	for i := range c.nodes {
		c.env[i] = append(c.env[i], "NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450")
	}
}

// failAll makes every stand-in apiserver answer 500, waits until every node
// has noticed and returns the one holder then.
func (c *cluster) failAll(t testing.TB) int {
	t.Helper()
	skip := make([]int, len(c.nodes))
	for i := range c.nodes {
		skip[i] = c.procs[i].Lines()
		if err := c.apis[i].Set(lab.ServerError); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.nodes {
		waitLine(t, c.procs[i], skip[i], "API server health changed", "state=unhealthy")
	}
	h, _ := c.waitHolder(t, vip4, -1, 5*time.Second)
	return h
}

// TestVRRPFailOpenWhileEveryAPIServerIsDown: every apiserver fails at once;
// the holder keeps both VIPs (fail open) and says so in status and its log;
// the first node whose apiserver comes back takes them within its skew time.
func TestVRRPFailOpenWhileEveryAPIServerIsDown(t *testing.T) {
	c := newCluster(t, 3)
	withStatus(c)
	c.startAll(t)
	h, _ := c.waitHolder(t, vip4, -1, 15*time.Second)
	if h6, _ := c.waitHolder(t, vip6, -1, 15*time.Second); h6 != h {
		t.Fatalf("IPv4 VIP on %s, IPv6 VIP on %s: want one holder", c.nodes[h].Name, c.nodes[h6].Name)
	}
	skip := c.procs[h].Lines()
	first := h
	h = c.failAll(t)
	if h != first {
		t.Logf("FIGURE the VIP moved once as the shared failure began (%s's check failed first, %s's had not yet)", c.nodes[first].Name, c.nodes[h].Name)
	} else {
		waitLine(t, c.procs[h], skip, "API server is unhealthy, releasing VIP", "fail-open priority 1")
	}
	waitLine(t, c.procs[h], 0, "No node is healthy: keeping the VIP (fail open)", "500")
	for _, vip := range []string{vip4.String(), vip6.String()} {
		c.stayOne(t, mustPrefix(vip), 3*time.Second)
		if hs, _ := c.holders(mustPrefix(vip)); len(hs) != 1 || hs[0] != h {
			t.Fatalf("holders of %s %v while every apiserver fails, want %s keeping it", vip, c.names(hs), c.nodes[h].Name)
		}
	}
	s := readFailOpen(t, c.nodes[h])
	if !s.FailOpen.Enabled || !s.FailOpen.InForce || s.FailOpen.Priority != 1 || !strings.Contains(s.FailOpen.Reason, "500") {
		t.Errorf("holder's status: %+v, want fail open in force with the check's reason", s.FailOpen)
	}
	if table, _ := c.nodes[h].Exec(binary, "status"); !strings.Contains(table, "IN FORCE") {
		t.Errorf("status table does not say fail open is in force:\n%s", table)
	}
	other := (h + 1) % len(c.nodes)
	if s := readFailOpen(t, c.nodes[other]); s.FailOpen.InForce {
		t.Errorf("%s (not holding) says fail open is in force", c.nodes[other].Name)
	}
	skipOther := c.procs[other].Lines()
	if err := c.apis[other].Set(lab.OK); err != nil {
		t.Fatal(err)
	}
	got, d := c.waitHolder(t, vip4, h, 10*time.Second)
	if got != other {
		t.Fatalf("holder %s, want %s, the only healthy node", c.nodes[got].Name, c.nodes[other].Name)
	}
	figure(t, "healthy node takes the VIP from the fail-open holder (health 100 ms x 3, advert 100 ms)", d)
	// Not before it settled: its second passed check comes an interval
	// (100 ms) after the first, which made it healthy; the handover skew
	// alone would be 61 ms.
	healthy := lineAt(t, c.procs[other], waitLine(t, c.procs[other], skipOther, "API server health changed", "state=healthy"))
	master := lineAt(t, c.procs[other], waitLine(t, c.procs[other], skipOther, "VRRP state changed", "to=master"))
	if took := master.Sub(healthy); took < 90*time.Millisecond {
		t.Errorf("%s took the VIP %v after its first passed check, want it settled first (a second check, 100 ms later)", c.nodes[other].Name, took)
	}
	if h6, _ := c.waitHolder(t, vip6, h, 10*time.Second); h6 != other {
		t.Errorf("IPv6 VIP on %s, want %s", c.nodes[h6].Name, c.nodes[other].Name)
	}
	if s := readFailOpen(t, c.nodes[other]); s.FailOpen.InForce {
		t.Errorf("healthy holder says fail open is in force: %+v", s.FailOpen)
	}
}

// TestVRRPFailOpenHolderDies: while no node is healthy the fail-open holder
// itself dies; the VIP still moves to another (unhealthy) node, and a node
// that was never healthy since it started never takes it.
func TestVRRPFailOpenHolderDies(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll(t)
	c.waitHolder(t, vip4, -1, 15*time.Second)
	h := c.failAll(t)
	// Restart a non-holder: it has not been healthy since it started.
	fresh := (h + 1) % 3
	c.procs[fresh].Kill()
	if err := c.restart(fresh); err != nil {
		t.Fatal(err)
	}
	waitLine(t, c.procs[fresh], 0, "API server is unhealthy, leaving VRRP election")
	// The holder vanishes: its link is cut.
	cut := time.Now()
	if err := c.nodes[h].SetSwitchPort(false); err != nil {
		t.Fatal(err)
	}
	var got int
	err := lab.Eventually(10*time.Second, func() error {
		hs, err := c.holders(vip4)
		if err != nil {
			return err
		}
		var others []int
		for _, x := range hs {
			if x != h {
				others = append(others, x)
			}
		}
		if len(others) != 1 {
			return errHolders(c.names(others))
		}
		got = others[0]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	figure(t, "fail-open holder cut off: another unhealthy node keeps the VIP after (master down interval 361 ms)", time.Since(cut))
	if got == fresh {
		t.Fatalf("%s took the VIP although it was never healthy since it started", c.nodes[fresh].Name)
	}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, held, _ := c.nodes[fresh].Has(vip4); held {
			t.Fatalf("%s took the VIP although it was never healthy since it started", c.nodes[fresh].Name)
		}
	}
}

// TestSingleNodeFailOpen: a lone node keeps the VIP while its apiserver is
// down (there is nobody to hand it to), and says so.
func TestSingleNodeFailOpen(t *testing.T) {
	l := newL2Lab(t)
	p := l.start(t, "NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450")
	l.waitVIP(t, vip4, true, 10*time.Second)
	skip := p.Lines()
	if err := l.api.Set(lab.Down); err != nil {
		t.Fatal(err)
	}
	waitLine(t, p, skip, "No node is healthy: keeping the VIP (fail open)")
	time.Sleep(2 * time.Second)
	for _, vip := range []string{vip4.String(), vip6.String()} {
		if _, held, err := l.node.Has(mustPrefix(vip)); err != nil || !held {
			t.Fatalf("%s released while the only apiserver is down (fail open keeps it): %v", vip, err)
		}
	}
	if s := readFailOpen(t, l.node); !s.FailOpen.InForce {
		t.Errorf("status: %+v, want fail open in force", s.FailOpen)
	}
	if err := l.api.Set(lab.OK); err != nil {
		t.Fatal(err)
	}
	err := lab.Eventually(10*time.Second, func() error {
		if s := readFailOpen(t, l.node); s.FailOpen.InForce {
			return fmt.Errorf("fail open still in force after recovery")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
