package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/reconcile/reconciletest"
)

var (
	nodeIP = netip.MustParsePrefix("192.0.2.11/24")
	vip4   = netip.MustParsePrefix("192.0.2.100/32")
	vip6   = netip.MustParsePrefix("2001:db8::100/128")
)

func actions(cs []Change) []Action {
	out := make([]Action, len(cs))
	for i, c := range cs {
		out[i] = c.Action
	}
	return out
}

func TestStep(t *testing.T) {
	both := map[netip.Prefix]bool{vip4: true, vip6: true}
	none := map[netip.Prefix]bool{vip4: false, vip6: false}
	tests := []struct {
		name      string
		actual    []netip.Prefix
		desired   map[netip.Prefix]bool
		want      []Action
		mutations []string
	}{
		{"converged holding: zero mutations", []netip.Prefix{nodeIP, vip4, vip6}, both, nil, nil},
		{"converged released: zero mutations", []netip.Prefix{nodeIP}, none, nil, nil},
		{"undecided VIP left alone", []netip.Prefix{nodeIP, vip4}, nil, nil, nil},
		{"install both", []netip.Prefix{nodeIP}, both, []Action{Installed, Installed}, []string{"add 192.0.2.100/32", "add 2001:db8::100/128"}},
		{"stale VIP from a killed run removed", []netip.Prefix{nodeIP, vip4}, none, []Action{Removed}, []string{"del 192.0.2.100/32"}},
		{"prefix changed by hand is corrected", []netip.Prefix{nodeIP, netip.MustParsePrefix("192.0.2.100/24")},
			map[netip.Prefix]bool{vip4: true}, []Action{Fixed}, []string{"del 192.0.2.100/24", "add 192.0.2.100/32"}},
		{"other addresses never touched", []netip.Prefix{nodeIP, netip.MustParsePrefix("192.0.2.101/32")}, none, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := reconciletest.New(tt.actual...)
			r := New(f, []netip.Prefix{vip4, vip6})
			got := r.Step(tt.desired)
			if !slices.Equal(actions(got), tt.want) {
				t.Errorf("actions %v, want %v", actions(got), tt.want)
			}
			if m := f.Take(); !slices.Equal(m, tt.mutations) {
				t.Errorf("mutations %q, want %q", m, tt.mutations)
			}
			// Whatever it did, the next step is converged: zero mutations.
			if again := r.Step(tt.desired); len(again) != 0 || len(f.Take()) != 0 {
				t.Errorf("second step changed %v", again)
			}
		})
	}
}

func TestInstalledThenFixedThenRemoved(t *testing.T) {
	f := reconciletest.New(nodeIP)
	r := New(f, []netip.Prefix{vip4})
	hold := map[netip.Prefix]bool{vip4: true}
	r.Step(hold)
	_ = f.Del(vip4) // someone deletes it by hand
	if got := actions(r.Step(hold)); !slices.Equal(got, []Action{Fixed}) {
		t.Fatalf("after manual delete: %v", got)
	}
	if got := actions(r.Step(map[netip.Prefix]bool{vip4: false})); !slices.Equal(got, []Action{Removed}) {
		t.Fatalf("release: %v", got)
	}
	if got := actions(r.Step(hold)); !slices.Equal(got, []Action{Installed}) {
		t.Fatalf("hold again after release counts as installed: %v", got)
	}
	want := Counts{Installed: 2, Fixed: 1, Removed: 1}
	if got := r.Counts(); len(got) != len(want) || got[Installed] != 2 || got[Fixed] != 1 || got[Removed] != 1 {
		t.Errorf("counts %v, want %v", got, want)
	}
}

func TestFailuresAreCountedAndRetried(t *testing.T) {
	f := reconciletest.New(nodeIP)
	f.Fail(errors.New("EPERM"), nil)
	r := New(f, []netip.Prefix{vip4})
	hold := map[netip.Prefix]bool{vip4: true}
	if got := r.Step(hold); len(got) != 1 || got[0].Action != Failed || got[0].Err == nil {
		t.Fatalf("got %+v", got)
	}
	f.Fail(nil, nil)
	if got := actions(r.Step(hold)); !slices.Equal(got, []Action{Installed}) {
		t.Fatalf("retry: %v", got)
	}
	f.Fail(nil, errors.New("netlink gone"))
	if got := actions(r.Step(hold)); !slices.Equal(got, []Action{Failed}) {
		t.Fatalf("list failure: %v", got)
	}
	if c := r.Counts(); c[Failed] != 2 || c[Installed] != 1 {
		t.Errorf("counts %v", c)
	}
}

func TestLoop(t *testing.T) {
	f := reconciletest.New(nodeIP)
	events := make(chan Event, 1)
	changed := make(chan Change, 16)
	linkUp := make(chan []netip.Prefix, 1)
	l := NewLoop(New(f, []netip.Prefix{vip4, vip6}), events, time.Hour, Hooks{
		Changed:    func(c Change) { changed <- c },
		Reannounce: func(held []netip.Prefix, _ string) { linkUp <- held },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()

	expect := func(a Action, vip netip.Prefix) {
		t.Helper()
		select {
		case c := <-changed:
			if c.Action != a || c.VIP != vip {
				t.Fatalf("change %+v, want %s %s", c, a, vip)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s %s", a, vip)
		}
	}
	l.Set(vip4, true)
	expect(Installed, vip4)
	_ = f.Del(vip4)
	events <- AddrChanged
	expect(Fixed, vip4)
	events <- LinkUp
	expectAnnounced(t, linkUp, "link up", vip4)
	l.Hold(vip4) // held: announced again
	expectAnnounced(t, linkUp, "asked again", vip4)
	cancel()
	expect(Removed, vip4)
	<-done
	if addrs, _ := f.List(); !slices.Equal(addrs, []netip.Prefix{nodeIP}) {
		t.Errorf("after Run returned: %v", addrs)
	}
}

// TestLinkUpWaitsForAPassThatReadsTheInterface: after the link came up the
// held VIPs are announced again by the first pass that can read the
// interface, not forgotten by one that cannot.
func TestLinkUpWaitsForAPassThatReadsTheInterface(t *testing.T) {
	f := reconciletest.New(nodeIP)
	var got []string
	l := NewLoop(New(f, []netip.Prefix{vip4}), nil, time.Hour, Hooks{Reannounce: func(held []netip.Prefix, reason string) {
		got = append(got, fmt.Sprint(held, " ", reason))
	}})
	l.Hold(vip4)
	l.Wake(false)
	l.Told(LinkUp)
	f.Fail(nil, errors.New("no such device"))
	l.Wake(false)
	if len(got) != 0 {
		t.Fatalf("announced %q from a pass that could not read the interface", got)
	}
	f.Fail(nil, nil)
	l.Wake(false)
	if want := []string{"[192.0.2.100/32] link up"}; !slices.Equal(got, want) {
		t.Fatalf("after the link came up: %q, want %q", got, want)
	}
	l.Wake(false)
	if len(got) != 1 {
		t.Fatalf("announced again without news: %q", got)
	}
}
