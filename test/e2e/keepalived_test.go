package e2e

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

func needKeepalived(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("keepalived"); err != nil {
		t.Fatal("keepalived is not installed: run make deps")
	}
}

// Our nodes run only the IPv4 VIP here: keepalived's instance carries one address.
var v4only = "NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32"

func TestKeepalivedHigherPriorityMasterLeftAlone(t *testing.T) {
	needKeepalived(t)
	c := newCluster(t, 2, v4only)
	ka, kp := c.addKeepalived(t, "ka", lab.Keepalived{VRID: 51, Priority: 200, Advert: "0.1", VIP: "192.0.2.100/32"})
	waitLine(t, kp, 0, "Entering MASTER STATE")
	if h, _ := c.waitHolder(t, vip4, -1, 10*time.Second); h != ka {
		t.Fatalf("holder %s, want keepalived", c.nodes[h].Name)
	}
	c.start(t, 0)
	c.start(t, 1)
	waitLine(t, c.procs[0], 0, "VRRP state changed", "to=backup")
	waitLine(t, c.procs[1], 0, "VRRP state changed", "to=backup")
	c.stayOne(t, vip4, 2*time.Second) // our nodes leave keepalived alone
	if h, _ := c.holders(vip4); len(h) != 1 || h[0] != ka {
		t.Fatalf("holders %v, want keepalived only", c.names(h))
	}
	c.reach(t, vip4.Addr(), ka)
	for i := range 2 {
		if n := lines(c.procs[i], "VRRP state changed", "to=master"); n != 0 {
			t.Errorf("%s became master %d times beside a higher-priority keepalived", c.nodes[i].Name, n)
		}
	}

	// keepalived stops (priority 0): one of ours takes over.
	stop := time.Now()
	if err := kp.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	c.waitHolder(t, vip4, ka, 10*time.Second)
	figure(t, "one of ours takes over after keepalived stops", time.Since(stop))
	// Our two nodes have the same priority, so the same skew time after
	// keepalived's priority 0: both may take over within milliseconds
	// (RFC 5798 6.4.2), and the higher address keeps it (CI: n1 bound,
	// n2 3 ms later, n1 yielded; the client was sent to n1). Reach the
	// one that settled.
	h := c.settledHolder(t, vip4, ka, 5*time.Second)
	c.stayOne(t, vip4, time.Second)
	c.reach(t, vip4.Addr(), h)
}

func TestKeepalivedLowerPriorityStaysBackupAndTakesOverLast(t *testing.T) {
	needKeepalived(t)
	c := newCluster(t, 2, v4only)
	c.start(t, 0)
	c.start(t, 1)
	h, _ := c.waitHolder(t, vip4, -1, 10*time.Second)
	ka, kp := c.addKeepalived(t, "ka", lab.Keepalived{VRID: 51, Priority: 50, Advert: "0.1", VIP: "192.0.2.100/32", Preempt: true})
	waitLine(t, kp, 0, "Entering BACKUP STATE")
	c.stayOne(t, vip4, 2*time.Second)
	if got, _ := c.holders(vip4); len(got) != 1 || got[0] != h {
		t.Fatalf("holders %v, want %s still", c.names(got), c.nodes[h].Name)
	}
	if n := lines(kp, "Entering MASTER STATE"); n != 0 {
		t.Errorf("lower-priority keepalived became master %d times", n)
	}

	// Our master dies (kill -9: no priority 0): our other node, priority 100, is next.
	other := 1 - h
	kill := time.Now()
	if err := c.procs[h].Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = c.procs[h].Wait(5 * time.Second)
	if _, err := c.nodes[h].Exec("ip", "addr", "del", "192.0.2.100/32", "dev", "eth0"); err != nil {
		t.Fatal(err) // the killed process could not clean up: the host's own reboot would
	}
	got, _ := c.waitHolder(t, vip4, h, 10*time.Second)
	if got != other {
		t.Fatalf("holder %s after our master died, want our other node %s", c.nodes[got].Name, c.nodes[other].Name)
	}
	figure(t, "our next node takes over after our master is killed (keepalived backup present)", time.Since(kill))

	// Our last node stops: keepalived takes over.
	stop := time.Now()
	if err := c.procs[other].Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.waitHolder(t, vip4, other, 10*time.Second); got != ka {
		t.Fatalf("holder %s, want keepalived", c.nodes[got].Name)
	}
	figure(t, "keepalived takes over after our last node stops", time.Since(stop))
	c.reach(t, vip4.Addr(), ka)
}
