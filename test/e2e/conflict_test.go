package e2e

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestVIPAnsweredByAnotherHostIsNeverBound: a host outside our group holds
// the VIPs (the common mistake: a VIP picked from addresses in use, or
// kube-vip still running). Our nodes elect a master, which never binds
// them while that host answers, says so, and binds them within a second
// of that host letting them go.
func TestVIPAnsweredByAnotherHostIsNeverBound(t *testing.T) {
	c := newCluster(t, 3)
	sq, err := c.AddHost("sq", mustPrefix("192.0.2.50/24"), mustPrefix("2001:db8::50/64"), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, vip := range []netip.Prefix{vip4, vip6} {
		if _, err := sq.Exec("ip", "addr", "add", vip.String(), "dev", "eth0", "nodad"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.nodes {
		c.env[i] = []string{"NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450"}
	}
	c.startAll(t)
	// Masters elected (100 ms adverts: master-down 0.4 s), then 5 s of
	// samples: never bound by any node of ours.
	waitLine(t, c.procs[0], 0, "VRRP state changed")
	bound := 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for _, vip := range []netip.Prefix{vip4, vip6} {
			hs, err := c.holders(vip)
			if err != nil {
				t.Fatal(err)
			}
			bound += len(hs)
		}
	}
	t.Logf("FIGURE samples in 5 s with a VIP bound by our nodes while another host has it: %d", bound)
	if bound != 0 {
		t.Errorf("our nodes bound a VIP another host answers for (%d samples)", bound)
	}
	master := -1
	for i := range c.nodes {
		if lines(c.procs[i], "VRRP state changed", "to=master") > 0 {
			master = i
		}
	}
	if master < 0 {
		t.Fatal("no master elected")
	}
	for _, vip := range []netip.Prefix{vip4, vip6} {
		if n := lines(c.procs[master], "Another host answers for the VIP", "address="+vip.Addr().String(), "mac="+sq.MAC.String()); n != 1 {
			t.Errorf("the master logged the conflict on %s %d times, want once", vip.Addr(), n)
		}
	}
	{
		st, err := c.nodes[master].Exec(binary, "status")
		if err != nil || !strings.Contains(st, "address conflict") || !strings.Contains(st, sq.MAC.String()) {
			t.Errorf("status does not show the conflict: %v\n%s", err, st)
		}
		m, _ := c.nodes[master].Exec("curl", "-s", "http://127.0.0.1:9450/metrics")
		if !strings.Contains(m, `novaedge_cpvip_address_conflict{vip="192.0.2.100/32"} 1`) {
			t.Errorf("metrics lack the conflict gauge:\n%s", grepLines(m, "conflict"))
		}
	}
	// The other host lets go: bound within a second.
	for _, vip := range []netip.Prefix{vip4, vip6} {
		if _, err := sq.Exec("ip", "addr", "del", vip.String(), "dev", "eth0"); err != nil {
			t.Fatal(err)
		}
		freed := time.Now()
		h, _ := c.waitHolder(t, vip, -1, 5*time.Second)
		took := time.Since(freed)
		t.Logf("FIGURE %s bound by %s %v after the other host let it go", vip.Addr(), c.nodes[h].Name, took.Round(time.Millisecond))
		if took > time.Second {
			t.Errorf("%s bound %v after it was free, want within 1 s", vip.Addr(), took)
		}
		if h != master {
			t.Errorf("%s bound by %s, not the master %s", vip.Addr(), c.nodes[h].Name, c.nodes[master].Name)
		}
		waitLine(t, c.procs[master], 0, "No other host answers for the VIP any more", "address="+vip.Addr().String())
	}
	c.stayOne(t, vip4, 2*time.Second)
	c.reach(t, vip4.Addr(), master)
}
