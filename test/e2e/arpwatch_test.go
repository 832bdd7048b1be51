package e2e

import (
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// askEvery is how often the client asks who has the VIP while an ARP watch runs.
const askEvery = 50 * time.Millisecond

// arpWatch has the client ask who has a VIP every askEvery and captures, on
// the client's port of the switch, every ARP packet to and from it: each
// host that answers for the VIP answers each request, so a request with
// two answers is a moment with two holders, seen on the wire.
type arpWatch struct {
	t       *testing.T
	sw      *lab.Host
	client  netip.Addr
	vip     netip.Addr
	file    string
	stopCap func()
	stopAsk func()
}

func watchARP(t *testing.T, c *cluster, vip netip.Addr) *arpWatch {
	t.Helper()
	w := &arpWatch{t: t, sw: c.Switch(), client: c.client.IPv4.Addr(), vip: vip}
	w.file, w.stopCap = captureOn(t, w.sw, c.client.SwitchPort(), "arp")
	stop, err := c.client.AskARP(vip, askEvery)
	if err != nil {
		w.stopCap()
		t.Fatal(err)
	}
	w.stopAsk = stop
	return w
}

// arpAnswers is what an ARP watch saw.
type arpAnswers struct {
	asked      int           // requests the client sent
	unanswered int           // of them, answered by nobody
	double     int           // answered by two hosts or more
	doubleSpan time.Duration // from the first such request to the last (+ askEvery)
	longest    time.Duration // the longest run of such requests in a row (× askEvery)
	changes    int           // how often the answering MAC changed
}

// stop ends the watch and reads its capture.
func (w *arpWatch) stop() arpAnswers {
	w.stopAsk()
	time.Sleep(2 * askEvery) // the last answers
	w.stopCap()
	rows := tshark(w.t, w.sw, w.file, "arp", "frame.time_relative", "arp.opcode", "arp.src.hw_mac",
		"arp.src.proto_ipv4", "arp.dst.proto_ipv4")
	return countAnswers(rows, w.client.String(), w.vip.String())
}

// countAnswers walks a capture's ARP packets (time, opcode, sender MAC,
// sender address, target address): each request from client for vip opens
// a window that the next one closes; the replies from vip to client in it
// are its answers.
func countAnswers(rows [][]string, client, vip string) arpAnswers {
	var a arpAnswers
	var macs []string
	latest := "" // the latest answer's MAC
	open, run := false, 0
	var at, first, last float64
	closeWindow := func() {
		if !open {
			return
		}
		if len(macs) < 2 {
			run = 0
		} else {
			if a.double == 0 {
				first = at
			}
			a.double++
			last = at
			run++
			a.longest = max(a.longest, time.Duration(run)*askEvery)
		}
		if len(macs) == 0 {
			a.unanswered++
		}
	}
	for _, r := range rows {
		if len(r) < 5 {
			continue
		}
		ts, _ := strconv.ParseFloat(r[0], 64)
		switch {
		case r[1] == "1" && r[3] == client && r[4] == vip:
			closeWindow()
			open, at, macs = true, ts, nil
			a.asked++
		case r[1] == "2" && r[3] == vip && r[4] == client && open:
			if !slices.Contains(macs, r[2]) {
				macs = append(macs, r[2])
			}
			if latest != "" && latest != r[2] {
				a.changes++
			}
			latest = r[2]
		}
	}
	closeWindow()
	if a.double > 0 {
		a.doubleSpan = time.Duration((last-first)*float64(time.Second)) + askEvery
	}
	return a
}

// TestCountAnswers: the walk over a capture counts unanswered and doubly
// answered requests.
func TestCountAnswers(t *testing.T) {
	const c, v = "192.0.2.2", "192.0.2.100"
	rows := [][]string{
		{"0.00", "1", "cc", c, v}, {"0.01", "2", "aa", v, c},
		{"0.05", "1", "cc", c, v},
		{"0.10", "1", "cc", c, v}, {"0.11", "2", "aa", v, c}, {"0.11", "2", "bb", v, c},
		{"0.12", "1", "bb", v, v}, // a gratuitous ARP: not an answer
		{"0.15", "1", "cc", c, v}, {"0.16", "2", "bb", v, c}, {"0.16", "2", "aa", v, c},
		{"0.20", "1", "cc", c, v}, {"0.21", "2", "bb", v, c},
	}
	a := countAnswers(rows, c, v)
	want := arpAnswers{asked: 5, unanswered: 1, double: 2, doubleSpan: 50*time.Millisecond + askEvery,
		longest: 2 * askEvery, changes: 3}
	if a.asked != want.asked || a.unanswered != want.unanswered || a.double != want.double || a.longest != want.longest ||
		a.doubleSpan.Round(time.Millisecond) != want.doubleSpan || a.changes != want.changes {
		t.Fatalf("got %+v, want %+v", a, want)
	}
}
