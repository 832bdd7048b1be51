package vrrp

import (
	"net/netip"
	"testing"
	"time"
)

// TestForeignGroupIgnored: a stronger master of another group on our VRID
// (another address list) does not take our master down; its adverts are
// counted and remembered once per source.
func TestForeignGroupIgnored(t *testing.T) {
	inst, tr, d := runInstance(t, netip.MustParseAddr("192.0.2.11"), 100*time.Millisecond)
	healthy(inst)
	waitDecisions(t, d, "becoming master", last)
	other := netip.MustParseAddr("192.0.2.15")
	for range 3 {
		tr.in <- fakeRx{adv: Advertisement{VRID: 51, Priority: 200, Interval: 10,
			Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.200")}}, src: other}
	}
	deadline := time.Now().Add(10 * time.Second)
	for inst.Status().Drops[DropForeign] < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("drops %v, want 3 %s", inst.Status().Drops, DropForeign)
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := inst.Status()
	if st.State != Master || !last(d.snapshot()) {
		t.Fatalf("state %s, decisions %v: a foreign group took our VIP", st.State, d.snapshot())
	}
	if len(st.Foreign) != 1 || st.Foreign[0].Source != other {
		t.Fatalf("foreign groups %v, want one from %s", st.Foreign, other)
	}
}

func TestOurs(t *testing.T) {
	vip := netip.MustParseAddr("192.0.2.100")
	for _, tt := range []struct {
		addrs []netip.Addr
		want  bool
	}{
		{[]netip.Addr{vip}, true},
		{nil, false},
		{[]netip.Addr{netip.MustParseAddr("192.0.2.101")}, false},
		{[]netip.Addr{vip, netip.MustParseAddr("192.0.2.101")}, false},
	} {
		if got := ours(tt.addrs, vip); got != tt.want {
			t.Errorf("ours(%v) = %v, want %v", tt.addrs, got, tt.want)
		}
	}
}

func TestForeignBounded(t *testing.T) {
	var f foreignGroups
	for i := range maxForeign + 4 {
		src := netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
		if got, want := f.add(src, nil), i < maxForeign; got != want {
			t.Fatalf("source %d new = %v, want %v", i, got, want)
		}
		if f.add(src, nil) {
			t.Fatalf("source %d reported twice", i)
		}
	}
	if n := len(f.snapshot()); n != maxForeign {
		t.Fatalf("%d remembered, want %d", n, maxForeign)
	}
}
