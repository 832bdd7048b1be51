package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// arm64Binary is our daemon built for linux/arm64 (NOVAEDGE_E2E_ARM64_BINARY,
// else built here), and qemu-user to run it.
func arm64Binary(t *testing.T) []string {
	t.Helper()
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		needBuilt(t, err) // make deps installs qemu-user-static
	}
	bin := os.Getenv("NOVAEDGE_E2E_ARM64_BINARY")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "novaedge-cpvip-arm64")
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "../../cmd/novaedge-cpvip")
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building for arm64: %v\n%s", err, out)
		}
	}
	return []string{qemu, bin}
}

// TestMixedArchGroup: an arm64 build under emulation (qemu-user) and two
// amd64 nodes in one VRRP group, dual-stack: the arm64 node wins the
// election (priority 150), hands the VIP over when its apiserver fails,
// takes it back when it recovers, and resigns on a graceful stop; tshark
// decodes everything it sent cleanly.
func TestMixedArchGroup(t *testing.T) {
	c := newCluster(t, 3, "NOVAEDGE_CP_VIP_PREEMPT=true")
	c.cmd[0] = arm64Binary(t)
	c.env[0] = []string{"NOVAEDGE_CP_VIP_PRIORITY=150", "NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450"}
	file, stopCapture := capture(t, c.client, "(ip proto 112 or ip6 proto 112 or arp or icmp6) and ether src "+c.nodes[0].MAC.String())
	c.startAll(t)
	// The amd64 nodes start faster and elect one of them; the arm64 node
	// (priority 150, preempt) takes the VIP once it runs.
	start := time.Now()
	if err := lab.Eventually(30*time.Second, func() error { return heldBy(c, 0) }); err != nil {
		st, _ := c.nodes[0].Exec(binary, "status", "-o", "json")
		t.Fatalf("%v\n%s", err, st)
	}
	t.Logf("FIGURE election: the arm64 node holds the VIP %v after start", time.Since(start).Round(time.Millisecond))
	c.waitHolder(t, vip6, -1, 15*time.Second)
	if !c.held(0, vip6) {
		t.Error("the arm64 node holds the IPv4 VIP but not the IPv6 one")
	}
	c.reach(t, vip4.Addr(), 0)
	// Takeover: its apiserver fails, an amd64 node takes the VIP; it
	// recovers, the arm64 node (higher priority, preempt) takes it back.
	if err := c.apis[0].Set(lab.Down); err != nil {
		t.Fatal(err)
	}
	h, took := c.waitHolder(t, vip4, 0, 15*time.Second)
	t.Logf("FIGURE arm64 holder's apiserver down: %s took the VIP in %v", c.nodes[h].Name, took.Round(time.Millisecond))
	if err := c.apis[0].Set(lab.OK); err != nil {
		t.Fatal(err)
	}
	if err := lab.Eventually(15*time.Second, func() error { return heldBy(c, 0) }); err != nil {
		t.Fatal(err)
	}
	c.stayOne(t, vip4, 2*time.Second)
	// Graceful stop: priority 0, an amd64 node takes over, exit 0.
	if err := c.procs[0].Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h, took = c.waitHolder(t, vip4, 0, 15*time.Second)
	t.Logf("FIGURE arm64 holder stopped gracefully: %s took the VIP in %v", c.nodes[h].Name, took.Round(time.Millisecond))
	if code, err := c.procs[0].Wait(15 * time.Second); err != nil || code != 0 {
		t.Errorf("the arm64 node exited %d, %v", code, err)
	}
	time.Sleep(500 * time.Millisecond)
	stopCapture()

	adverts := tshark(t, c.client, file, "vrrp", "vrrp.version", "vrrp.virt_rtr_id", "vrrp.prio", "vrrp.checksum.status", "ip.ttl", "ipv6.hlim")
	prio := map[string]int{}
	for _, r := range adverts {
		if r[0] != "3" || r[1] != "51" || r[3] != "1" || r[4]+r[5] != "255" {
			t.Fatalf("arm64 node's advertisement %v: want VRRPv3, VRID 51, good checksum, TTL 255", r)
		}
		prio[r[2]]++
	}
	garp := tshark(t, c.client, file, "arp.isgratuitous == 1 && arp.src.proto_ipv4 == "+vip4.Addr().String(), "arp.opcode")
	probes := tshark(t, c.client, file, "arp.isprobe == 1 && arp.dst.proto_ipv4 == "+vip4.Addr().String(), "arp.opcode")
	na := tshark(t, c.client, file, "icmpv6.type == 136 && icmpv6.nd.na.target_address == "+vip6.Addr().String(), "icmpv6.nd.na.flag.o")
	t.Logf("FIGURE tshark decoded from the arm64 node: %d VRRPv3 advertisements by priority %v, %d gratuitous ARP, %d ARP probes, %d unsolicited NA",
		len(adverts), prio, len(garp), len(probes), len(na))
	if prio["150"] == 0 || prio["0"] == 0 || len(garp) == 0 || len(probes) == 0 || len(na) == 0 {
		t.Errorf("missing packets from the arm64 node: adverts %v, %d GARP, %d probes, %d NA", prio, len(garp), len(probes), len(na))
	}
	if bad := tshark(t, c.client, file, "_ws.malformed || _ws.expert.severity >= error", "frame.number", "_ws.col.Info"); len(bad) > 0 {
		t.Errorf("tshark finds malformed packets from the arm64 node: %v", bad)
	}
}

func heldBy(c *cluster, i int) error {
	hs, err := c.holders(vip4)
	if err != nil {
		return err
	}
	if len(hs) != 1 || hs[0] != i {
		return fmt.Errorf("holders of %s: %v, want %s alone", vip4, c.names(hs), c.nodes[i].Name)
	}
	return nil
}
