package bgp

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// journal records kernel and BGP operations in the order they happen.
type journal struct {
	mu    sync.Mutex
	ops   []string
	addrs []netip.Prefix
}

func (j *journal) add(op string) {
	j.mu.Lock()
	j.ops = append(j.ops, op)
	j.mu.Unlock()
}

func (j *journal) List() ([]netip.Prefix, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.addrs), nil
}

func (j *journal) Add(p netip.Prefix, _ time.Duration) error {
	j.add("bind " + p.String())
	j.mu.Lock()
	j.addrs = append(j.addrs, p)
	j.mu.Unlock()
	return nil
}

func (j *journal) Del(p netip.Prefix) error {
	j.add("unbind " + p.String())
	j.mu.Lock()
	j.addrs = slices.DeleteFunc(j.addrs, func(q netip.Prefix) bool { return q == p })
	j.mu.Unlock()
	return nil
}

type fakeRoutes struct{ j *journal }

func (f fakeRoutes) Announce(p netip.Prefix, demoted bool) error {
	if demoted {
		f.j.add("announce demoted " + p.String())
		return nil
	}
	f.j.add("announce " + p.String())
	return nil
}
func (f fakeRoutes) Withdraw(p netip.Prefix) error { f.j.add("withdraw " + p.String()); return nil }
func (f fakeRoutes) Stop()                         { f.j.add("stop") }

func (j *journal) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		j.mu.Lock()
		got := slices.Clone(j.ops)
		j.mu.Unlock()
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("operations %q\nwant %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAnnouncerOrdersKernelAndRoutes(t *testing.T) {
	vip := netip.MustParsePrefix("192.0.2.100/32")
	j := &journal{}
	a := NewAnnouncer(fakeRoutes{j}, reconcile.New(j, []netip.Prefix{vip}), nil, time.Hour,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()

	a.Hold(vip)
	j.waitFor(t, "bind 192.0.2.100/32", "announce 192.0.2.100/32")
	a.Release(vip)
	j.waitFor(t, "bind 192.0.2.100/32", "announce 192.0.2.100/32", "withdraw 192.0.2.100/32", "unbind 192.0.2.100/32")
	a.Hold(vip)
	cancel()
	<-done
	j.mu.Lock()
	tail := j.ops[4:]
	j.mu.Unlock()
	want := []string{"bind 192.0.2.100/32", "announce 192.0.2.100/32", "withdraw 192.0.2.100/32", "stop", "unbind 192.0.2.100/32"}
	if !slices.Equal(tail, want) {
		t.Errorf("hold then shutdown: %q\nwant %q", tail, want)
	}
}

func TestPathCarriesFamilyNextHopAndCommunities(t *testing.T) {
	sp := &Speaker{cfg: Config{Communities: []uint32{65000<<16 | 100}, NextHop: netip.MustParseAddr("198.51.100.50")}}
	for _, tt := range []struct{ vip, family string }{{"192.0.2.100/24", "ipv4-unicast"}, {"2001:db8::100/64", "ipv6-unicast"}} {
		p, err := sp.path(netip.MustParsePrefix(tt.vip), false, false)
		if err != nil {
			t.Fatal(err)
		}
		if p.Family.String() != tt.family {
			t.Errorf("%s: family %s", tt.vip, p.Family)
		}
		if got, want := p.Nlri.String(), netip.MustParsePrefix(tt.vip).Addr().String(); got[:len(want)] != want || (got != want+"/32" && got != want+"/128") {
			t.Errorf("%s: NLRI %s, want a host route", tt.vip, got)
		}
		if len(p.Attrs) != 3 {
			t.Errorf("%s: %d attributes, want origin, next hop, communities", tt.vip, len(p.Attrs))
		}
	}
}

// TestDemotedRoute: a demoted route carries our AS three more times and the
// GRACEFUL_SHUTDOWN community next to the configured ones; the rest stays.
func TestDemotedRoute(t *testing.T) {
	sp := &Speaker{cfg: Config{LocalAS: 65002, Communities: []uint32{65000<<16 | 100}}}
	p, err := sp.path(netip.MustParsePrefix("192.0.2.100/32"), false, true)
	if err != nil {
		t.Fatal(err)
	}
	var asPath, communities string
	for _, a := range p.Attrs {
		switch a := a.(type) {
		case *bgp.PathAttributeAsPath:
			asPath = a.String()
		case *bgp.PathAttributeCommunities:
			communities = a.String()
		}
	}
	if asPath != "{AsPath: 65002 65002 65002}" || communities != "{Communities: 65000:100, planned-shut}" || len(p.Attrs) != 4 {
		t.Errorf("demoted route: AS path %q, communities %q, %d attributes", asPath, communities, len(p.Attrs))
	}
}

type demoter struct{ j *journal }

func (d demoter) SetDemoted(v bool) {
	d.j.add("demoted " + map[bool]string{true: "on", false: "off"}[v])
}

// TestElectorFailOpen: unhealthy after healthy keeps holding, demoted; never
// healthy, or with fail open off, releases.
func TestElectorFailOpen(t *testing.T) {
	vip := netip.MustParsePrefix("192.0.2.100/32")
	for _, tt := range []struct {
		name     string
		failOpen bool
		steps    []bool
		want     []string
	}{
		{"fail open", true, []bool{false, true, false, true},
			[]string{"demoted off", "release", "demoted off", "hold", "demoted on", "hold", "demoted off", "hold"}},
		{"strict", false, []bool{true, false},
			[]string{"demoted off", "hold", "demoted off", "release"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := &journal{}
			e := NewElector([]netip.Prefix{vip}, demoter{j}, tt.failOpen, slog.New(slog.NewTextHandler(io.Discard, nil)))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				e.Run(ctx, func(_ netip.Prefix, hold bool) { j.add(map[bool]string{true: "hold", false: "release"}[hold]) })
				close(done)
			}()
			for i, ok := range tt.steps {
				st := map[bool]health.State{true: health.Healthy, false: health.Unhealthy}[ok]
				e.Health(health.Transition{State: st, Changed: true, Last: health.Result{Reason: "status 500"}})
				j.waitFor(t, tt.want[:2*(i+1)]...)
			}
			cancel()
			<-done
		})
	}
}
