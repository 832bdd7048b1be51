package e2e

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

var bfdEnv = []string{"NOVAEDGE_BFD_ENABLED=true", "NOVAEDGE_BFD_TX_INTERVAL=50ms", "NOVAEDGE_BFD_RX_INTERVAL=50ms", "NOVAEDGE_BFD_DETECT_MULT=3"}

// startFRRWithBFD runs bgpd with BFD on every node neighbour and bfdd at 50 ms x 3.
func (b *bgpLab) startFRRWithBFD(t testing.TB) { b.startFRRWithBFDAt(t, 50) }

// startFRRWithBFDAt is startFRRWithBFD with the router's BFD interval in ms.
func (b *bgpLab) startFRRWithBFDAt(t testing.TB, intervalMs int) {
	t.Helper()
	var ns []netip.Addr
	for i := range b.nodes {
		ns = append(ns, nodeV4(i))
	}
	f, err := b.router.StartFRR(lab.FRRConfig{
		BGP: lab.BGPRouterConfig(routerV4, 65002, ns, "", true),
		BFD: lab.BFDRouterConfig(intervalMs, 3),
	})
	if err != nil {
		t.Fatal(err)
	}
	b.frr = f
}

// waitBFD waits until FRR's session with peer has status want and returns it.
func (b *bgpLab) waitBFD(t testing.TB, peer netip.Addr, want string, within time.Duration) lab.BFDPeer {
	t.Helper()
	var got lab.BFDPeer
	err := lab.Eventually(within, func() error {
		peers, err := b.frr.BFDPeers()
		if err != nil {
			return err
		}
		got = peers[peer.String()]
		if got.Status != want {
			return fmt.Errorf("FRR's BFD session with %s is %q, want %q", peer, got.Status, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestBFDWithFRR(t *testing.T) {
	b := newBGPLab(t, 3)
	b.startFRRWithBFD(t)
	file, stopCapture := capture(t, b.router, "udp port 3784")
	for i := range b.nodes {
		b.start(t, i, bfdEnv...)
	}
	all := []netip.Addr{nodeV4(0), nodeV4(1), nodeV4(2)}
	for i := range b.nodes {
		p := b.waitBFD(t, nodeV4(i), "up", 30*time.Second)
		if p.TxInterval != 50 || p.RxInterval != 50 || p.RemoteTx != 50 || p.RemoteRx != 50 || p.RemoteDetect != 3 {
			t.Errorf("n%d negotiated %+v, want 50 ms both ways, multiplier 3", i+1, p)
		}
	}
	b.waitHops(t, vip4, 30*time.Second, all...)
	// "BFD session up" or "BFD session intervals changed", whichever saw 50 ms first.
	if _, err := b.procs[0].WaitLine(30*time.Second, 0, "BFD session ", "tx=50ms", "rx=50ms"); err != nil {
		t.Fatal(err)
	}

	// No flaps over a long window.
	before, err := b.frr.BFDDownEvents()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	after, _ := b.frr.BFDDownEvents()
	for i := range b.nodes {
		if n := after[nodeV4(i).String()] - before[nodeV4(i).String()]; n != 0 {
			t.Errorf("n%d: %d BFD down events in 10 s at 50 ms x 3", i+1, n)
		}
	}
	t.Log("three sessions at 50 ms x 3 stayed up for 10 s with no down event")
	table, err := b.nodes[2].Exec(binary, "status")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("novaedge-cpvip status on n3:\n%s", table)
	for _, want := range []string{"mode bgp", "established", "BFD PEER", "50ms", "yes"} {
		if !strings.Contains(table, want) {
			t.Errorf("status lacks %q", want)
		}
	}
	if _, m, err := b.nodes[2].HTTPGet("http://127.0.0.1:9450/metrics"); err != nil ||
		!strings.Contains(m, `novaedge_cpvip_bfd_session_up{peer="198.51.100.1"} 1`) || !strings.Contains(m, `novaedge_cpvip_bgp_peer_up{peer="198.51.100.1"} 1`) {
		t.Errorf("metrics lack BGP/BFD up: %v\n%s", err, grepLines(m, "bfd_session_up", "bgp_peer_up"))
	}

	// A frozen node: FRR declares it down within the detection time, its next hop leaves.
	freeze := time.Now()
	if err := b.procs[0].Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	b.waitBFD(t, nodeV4(0), "down", 5*time.Second)
	figure(t, "FRR declares the frozen node's BFD session down (50 ms x 3, polled via vtysh)", time.Since(freeze))
	b.waitHops(t, vip4, 5*time.Second, all[1:]...)
	figure(t, "frozen node's next hop gone from the router's kernel route", time.Since(freeze))
	thaw := time.Now()
	if err := b.procs[0].Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	b.waitBFD(t, nodeV4(0), "up", 20*time.Second)
	figure(t, "BFD up again after SIGCONT", time.Since(thaw))
	b.waitHops(t, vip4, 30*time.Second, all...)
	figure(t, "next hop back after SIGCONT (BGP re-established)", time.Since(thaw))

	// SIGTERM: FRR sees the remote diagnostic "administratively down".
	if err := b.procs[1].Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p := b.waitBFD(t, nodeV4(1), "down", 5*time.Second)
	if !strings.Contains(p.RemoteDiag, "administratively") {
		t.Errorf("FRR's remote diagnostic %q, want administratively down", p.RemoteDiag)
	}
	if code, err := b.procs[1].Wait(3 * time.Second); code != 0 || err != nil {
		t.Errorf("SIGTERM: exit %d %v", code, err)
	}
	stopCapture()

	rows := tshark(t, b.router, file, "bfd && ip.src != 198.51.100.1", "bfd.version", "ip.ttl", "udp.srcport", "udp.dstport", "bfd.sta")
	states := map[string]int{}
	for _, r := range rows {
		port, _ := strconv.Atoi(r[2])
		if r[0] != "1" || r[1] != "255" || port < 49152 || r[3] != "3784" {
			t.Fatalf("BFD packet from a node %v: want version 1, TTL 255, source port >= 49152, to 3784", r)
		}
		states[r[4]]++
	}
	t.Logf("tshark: %d BFD control packets from our nodes, all version 1, TTL 255, source port >= 49152; by state %v", len(rows), states)
	if len(rows) < 500 {
		t.Errorf("only %d packets captured", len(rows))
	}
	if bad := tshark(t, b.router, file, "_ws.malformed || _ws.expert.severity >= error", "frame.number"); len(bad) > 0 {
		t.Errorf("tshark finds malformed packets: %v", bad)
	}
}

func TestBFDKeyedSHA1WithBIRD(t *testing.T) {
	b := newBGPLab(t, 2)
	conf := birdRouterConfig(`protocol bfd {
  interface "eth0" {
    min rx interval 50 ms; min tx interval 50 ms; multiplier 3;
    authentication keyed sha1;
    password "bfd-key-1" { id 1; };
  };
}
`)
	bird, err := b.router.StartBIRD(conf)
	if err != nil {
		t.Fatal(err)
	}
	auth := []string{"NOVAEDGE_BFD_AUTH=keyed-sha1"}
	b.start(t, 0, append(append(auth, bfdEnv...), "NOVAEDGE_BFD_AUTH_KEY=bfd-key-1")...)
	b.start(t, 1, append(append(auth, bfdEnv...), "NOVAEDGE_BFD_AUTH_KEY=wrong-key")...)
	sessions := func() (string, error) { return bird.Birdc("show", "bfd", "sessions") }
	err = lab.Eventually(30*time.Second, func() error {
		out, err := sessions()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "198.51.100.11") && strings.Contains(line, "Up") {
				return nil
			}
		}
		return fmt.Errorf("BIRD's BFD session with n1 is not up:\n%s", out)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitLine(t, b.procs[0], 0, "BFD session up", "tx=50ms")
	time.Sleep(5 * time.Second) // the wrong key gets its chances
	out, _ := sessions()
	t.Logf("birdc show bfd sessions:\n%s", out)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "198.51.100.12") && strings.Contains(line, "Up") {
			t.Errorf("session with the wrong key is up: %s", line)
		}
	}
	if n := lines(b.procs[1], "BFD session up"); n != 0 {
		t.Errorf("n2 (wrong key) logged BFD up %d times", n)
	}
	for _, p := range b.procs[:2] {
		for _, k := range []string{"bfd-key-1", "wrong-key"} {
			if strings.Contains(p.Output(), k) {
				t.Error("a BFD key appears in our log")
			}
		}
	}
}
