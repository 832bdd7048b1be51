package health

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLossHistory(t *testing.T) {
	var n uint64
	h := lossHistory{read: func() (uint64, bool) { return n, true }}
	t0 := time.Unix(1000, 0)
	h.note(t0)
	if h.lossy(t0.Add(500 * time.Millisecond)) {
		t.Fatal("nothing lost: lossy")
	}
	n = 1 // a segment lost
	for i := 1; i <= 5; i++ {
		if !h.lossy(t0.Add(time.Duration(i) * time.Second)) {
			t.Fatalf("a segment lost %d s ago: not lossy", i)
		}
	}
	if h.lossy(t0.Add(6500 * time.Millisecond)) {
		t.Fatalf("the loss %v ago: still lossy (%+v)", 6*time.Second, h.readings)
	}
	if len(h.readings) > 8 {
		t.Fatalf("%d readings kept", len(h.readings))
	}
}

func TestLossHistoryUnreadable(t *testing.T) {
	h := lossHistory{read: func() (uint64, bool) { return 0, false }}
	h.note(time.Unix(1000, 0))
	if h.lossy(time.Unix(1001, 0)) {
		t.Fatal("unreadable counters: lossy")
	}
}

// The real counters of this machine read, and never go back.
func TestProcLoss(t *testing.T) {
	read := procLoss()
	a, ok := read()
	if !ok {
		t.Fatal("/proc/self/net/snmp and netstat unreadable")
	}
	if b, _ := read(); b < a {
		t.Fatalf("the count went back: %d then %d", a, b)
	}
}

// A stall while this host loses TCP segments is no hung apiserver: the
// check waits on to its timeout (one failure towards the threshold) and
// says why; no ping is sent.
func TestCheckStallWhileLosingIsNotHung(t *testing.T) {
	a := newStuckAPI(0)
	c := newHungChecker(t, a, 300*time.Millisecond, time.Second)
	var lost atomic.Uint64
	c.loss.read = func() (uint64, bool) { return lost.Add(1), true } // a segment lost at every reading
	r := c.Check(context.Background())
	if r.OK || r.Hung || r.Duration < time.Second || !strings.Contains(r.Reason, "losing TCP segments") {
		t.Fatalf("a stall while losing segments: %+v, want a timeout saying so", r)
	}
	a.mu.Lock()
	pings := a.pings
	a.mu.Unlock()
	if pings != 0 {
		t.Fatalf("%d pings sent", pings)
	}
}
