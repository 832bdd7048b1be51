package spread

import (
	"net/netip"
	"testing"
)

func threeBackends() *Pool {
	return NewPool([]Backend{
		{Addr: netip.MustParseAddrPort("127.0.0.1:6443"), Local: true},
		{Addr: netip.MustParseAddrPort("192.0.2.12:6443")},
		{Addr: netip.MustParseAddrPort("192.0.2.13:6443")},
	})
}

func pick(t *testing.T, p *Pool, tried ...int) int {
	t.Helper()
	tr := make([]bool, p.Len())
	for _, i := range tried {
		tr[i] = true
	}
	i, _, ok := p.Pick(tr)
	if !ok {
		t.Fatalf("no pick with %v tried", tried)
	}
	return i
}

func TestPickSpreadsEvenlyOverHealthyBackends(t *testing.T) {
	p := threeBackends()
	for i := range 3 {
		p.SetHealth(i, Up)
	}
	count := make([]int, 3)
	for range 3000 { // short connections: each closes before the next
		i := pick(t, p)
		p.Opened(i)
		p.Closed(i)
		count[i]++
	}
	for i, n := range count {
		if n != 1000 {
			t.Errorf("backend %d took %d of 3000, want 1000", i, n)
		}
	}
}

func TestPickPrefersFewestActive(t *testing.T) {
	p := threeBackends()
	for i := range 3 {
		p.SetHealth(i, Up)
	}
	p.Opened(0)
	p.Opened(0)
	p.Opened(1)
	if i := pick(t, p); i != 2 {
		t.Errorf("picked %d, want 2 (no connection)", i)
	}
}

func TestPickAvoidsUnhealthyDrainingAndFailed(t *testing.T) {
	p := threeBackends()
	p.SetHealth(0, Draining)
	p.SetHealth(1, Down)
	p.SetHealth(2, Up)
	for range 5 {
		if i := pick(t, p); i != 2 {
			t.Fatalf("picked %d, want the only healthy one, 2", i)
		}
	}
	p.DialFailed(2)
	if i := pick(t, p); i != 0 {
		t.Errorf("picked %d after 2's dial failed, want 0 (draining: it serves until its port closes)", i)
	}
	if i := pick(t, p, 0); i != 1 {
		t.Errorf("picked %d with 0 tried, want 1 (down, but its dial has not failed)", i)
	}
	if i := pick(t, p, 0, 1); i != 2 {
		t.Errorf("picked %d with 0 and 1 tried, want 2 (its dial failed: the last resort)", i)
	}
	if _, _, ok := p.Pick([]bool{true, true, true}); ok {
		t.Error("picked with every backend tried")
	}
	p.CheckPassed(2)
	if i := pick(t, p); i != 2 {
		t.Errorf("picked %d after 2's check passed, want 2", i)
	}
}

// Fail open: every check failing (a failure all nodes share) still
// serves, spread as before.
func TestPickServesWhenNoBackendIsHealthy(t *testing.T) {
	p := threeBackends()
	for i := range 3 {
		p.SetHealth(i, Down)
	}
	seen := map[int]bool{}
	for range 3 {
		seen[pick(t, p)] = true
	}
	if len(seen) != 3 {
		t.Errorf("picked %v, want every backend in turn", seen)
	}
}

func TestStatusCounts(t *testing.T) {
	p := threeBackends()
	p.Opened(1)
	p.Opened(1)
	p.Closed(1)
	p.DialFailed(2)
	st := p.Status()
	if st[1].Active != 1 || st[1].Connections != 2 || st[2].DialFailures != 1 || !st[2].DialFailed {
		t.Errorf("status %+v", st)
	}
}

// A failed dial keeps a backend last only until a check passes or a fresh
// verdict comes: it is never starved for good.
func TestDialFailedEndsWithAPassingCheck(t *testing.T) {
	p := threeBackends()
	for i := range 3 {
		p.SetHealth(i, Up)
	}
	p.DialFailed(0)
	for range 4 {
		if i := pick(t, p); i == 0 {
			t.Fatal("picked the backend whose dial failed while others serve")
		}
	}
	p.SetHealth(0, Up)
	seen := map[int]bool{}
	for range 3 {
		seen[pick(t, p)] = true
	}
	if !seen[0] {
		t.Errorf("picked %v after a fresh verdict, want backend 0 back in turn", seen)
	}
}

// UpLeft: a connection is worth moving only to a healthy backend not yet
// tried whose dial has not failed.
func TestUpLeft(t *testing.T) {
	p := NewPool([]Backend{{}, {}, {}})
	p.SetHealth(0, Up)
	p.SetHealth(1, Up)
	p.SetHealth(2, Down)
	if !p.UpLeft([]bool{true, false, false}) {
		t.Fatal("backend 1 is up and untried")
	}
	p.DialFailed(1)
	if p.UpLeft([]bool{true, false, false}) {
		t.Fatal("backend 1's dial failed, 2 is down: nothing to move to")
	}
	if p.UpLeft([]bool{true, true, true}) {
		t.Fatal("all tried")
	}
}
