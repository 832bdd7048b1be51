package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// capture records packets on a host's eth0 with tcpdump until stop is called.
func capture(t *testing.T, h *lab.Host, filter string) (file string, stop func()) {
	t.Helper()
	return captureOn(t, h, "eth0", filter)
}

// captureOn records packets on the host's interface ifname.
func captureOn(t *testing.T, h *lab.Host, ifname, filter string) (file string, stop func()) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "capture.pcap")
	p, err := h.Start("tcpdump", nil, "tcpdump", "-i", ifname, "--immediate-mode", "-U", "-n", "-w", file, filter)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitLine(10*time.Second, 0, "listening on"); err != nil {
		t.Fatalf("tcpdump: %v\n%s", err, p.Output())
	}
	return file, func() {
		_ = p.Signal(syscall.SIGINT)
		_, _ = p.Wait(5 * time.Second)
	}
}

// tshark decodes file with a display filter and returns one []string of fields per packet.
func tshark(t *testing.T, h *lab.Host, file, filter string, fields ...string) [][]string {
	t.Helper()
	args := []string{"tshark", "-r", file, "-Y", filter, "-T", "fields", "-E", "separator=|"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, err := h.Exec(args...)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "|"))
		}
	}
	return rows
}

func TestAnnouncementsOnTheWire(t *testing.T) {
	l := newL2Lab(t)
	file, stop := capture(t, l.client, "arp or icmp6")
	p := l.start(t)
	l.waitVIP(t, vip4, true, 10*time.Second)
	waitLine(t, p, 0, "Control-plane VIP bound", "address=2001:db8::100/128")
	time.Sleep(3 * time.Second) // GARP_REPEAT=3: at once, +1.1 s, +2.2 s
	stop()

	mac := l.node.MAC.String()
	arps := tshark(t, l.client, file, "arp.src.proto_ipv4 == 192.0.2.100",
		"frame.time_relative", "arp.opcode", "arp.src.hw_mac", "arp.dst.proto_ipv4", "eth.dst")
	var requests []float64
	replies := 0
	for _, r := range arps {
		if r[2] != mac || r[3] != "192.0.2.100" || r[4] != "ff:ff:ff:ff:ff:ff" {
			t.Errorf("gratuitous ARP %v: want sender %s, target 192.0.2.100, to broadcast", r, mac)
		}
		switch r[1] {
		case "1":
			ts, _ := strconv.ParseFloat(r[0], 64)
			requests = append(requests, ts)
		case "2":
			replies++
		}
	}
	if len(requests) != 3 || replies != 3 {
		t.Fatalf("%d GARP requests and %d replies, want 3 and 3 (GARP_REPEAT=3):\n%v", len(requests), replies, arps)
	}
	for i := 1; i < len(requests); i++ {
		gap := time.Duration((requests[i] - requests[i-1]) * float64(time.Second))
		if gap < time.Second || gap > 3*time.Second {
			t.Errorf("gap between announcements %d and %d is %s, want about 1.1 s", i, i+1, gap)
		}
		figure(t, fmt.Sprintf("gap between GARP %d and %d", i, i+1), gap)
	}

	nas := tshark(t, l.client, file, "icmpv6.type == 136 && icmpv6.nd.na.target_address == 2001:db8::100",
		"icmpv6.nd.na.flag.o", "icmpv6.nd.na.flag.s", "icmpv6.opt.linkaddr", "ipv6.hlim", "ipv6.dst", "frame.time_relative")
	if len(nas) != 3 {
		t.Fatalf("%d unsolicited NAs, want 3:\n%v", len(nas), nas)
	}
	for _, r := range nas {
		if (r[0] != "1" && r[0] != "True") || (r[1] != "0" && r[1] != "False") || r[2] != mac || r[3] != "255" || r[4] != "ff02::1" {
			t.Errorf("NA %v: want Override, not Solicited, target link-layer %s, hop limit 255, to ff02::1", r, mac)
		}
	}
	if bad := tshark(t, l.client, file, "_ws.malformed || _ws.expert.severity >= error", "frame.number"); len(bad) > 0 {
		t.Errorf("tshark finds malformed packets: %v", bad)
	}
}
