package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/health"
)

var (
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
	vip4  = netip.MustParsePrefix("192.0.2.100/32")
	vip6  = netip.MustParsePrefix("2001:db8::100/128")
)

type scriptedHealth struct{ in chan health.State }

func (h scriptedHealth) Run(ctx context.Context, out chan<- health.Transition) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-h.in:
			out <- health.Transition{State: s, Changed: true}
		}
	}
}

// journal records what happened, in order, across the fakes.
type journal struct {
	mu     sync.Mutex
	events []string
	seen   chan struct{}
}

func (j *journal) add(e string) {
	j.mu.Lock()
	j.events = append(j.events, e)
	j.mu.Unlock()
	select {
	case j.seen <- struct{}{}:
	default:
	}
}

func (j *journal) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		j.mu.Lock()
		got := slices.Clone(j.events)
		j.mu.Unlock()
		if len(got) >= len(want) && slices.Equal(got[len(got)-len(want):], want) {
			return
		}
		select {
		case <-j.seen:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("events %q, want them to end with %q", got, want)
		}
	}
}

type fakeAnnouncer struct{ j *journal }

func (f fakeAnnouncer) Hold(v netip.Prefix)    { f.j.add("hold " + v.String()) }
func (f fakeAnnouncer) Release(v netip.Prefix) { f.j.add("release " + v.String()) }
func (f fakeAnnouncer) Run(ctx context.Context) {
	<-ctx.Done()
	f.j.add("announcer released all")
}

// resigningElector wraps the health elector and records its resignation.
type resigningElector struct {
	*HealthElector
	j *journal
}

func (e resigningElector) Run(ctx context.Context, decide func(netip.Prefix, bool)) {
	e.HealthElector.Run(ctx, decide)
	e.j.add("elector resigned")
}

func TestAgentFollowsHealthAndShutsDownInOrder(t *testing.T) {
	j := &journal{seen: make(chan struct{}, 1)}
	h := scriptedHealth{in: make(chan health.State)}
	a := &Agent{
		Health:    h,
		Elector:   resigningElector{NewHealthElector([]netip.Prefix{vip4, vip6}, quiet), j},
		Announcer: fakeAnnouncer{j},
		Log:       quiet,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()

	h.in <- health.Healthy
	j.waitFor(t, "hold 192.0.2.100/32", "hold 2001:db8::100/128")
	h.in <- health.Unhealthy
	j.waitFor(t, "release 192.0.2.100/32", "release 2001:db8::100/128")
	cancel()
	<-done
	j.waitFor(t, "elector resigned", "announcer released all")
}

type localHealth struct{ j *journal }

func (l localHealth) SetLocal(s health.State) { l.j.add("local " + s.String()) }

// Spreading's local backend learns every transition of the node's own check.
func TestAgentTellsLocalHealth(t *testing.T) {
	j := &journal{seen: make(chan struct{}, 1)}
	lj := &journal{seen: make(chan struct{}, 1)} // its own: the announcer's events come in between
	h := scriptedHealth{in: make(chan health.State)}
	a := &Agent{Health: h, Elector: NewHealthElector([]netip.Prefix{vip4}, quiet), Announcer: fakeAnnouncer{j},
		Log: quiet, Local: localHealth{lj}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	h.in <- health.Healthy
	lj.waitFor(t, "local healthy")
	h.in <- health.Draining
	lj.waitFor(t, "local draining")
	cancel()
	<-done
}

func TestHealthElectorKeepsOnlyTheLatestCandidacy(t *testing.T) {
	e := NewHealthElector([]netip.Prefix{vip4}, quiet)
	e.Health(health.Transition{State: health.Healthy, Changed: true})
	e.Health(health.Transition{State: health.Unhealthy, Changed: true, Last: health.Result{Reason: "status 500"}}) // replaces the value not yet taken
	var got []bool
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx, func(_ netip.Prefix, hold bool) { got = append(got, hold); cancel() })
	<-ctx.Done()
	if !slices.Equal(got, []bool{false}) {
		t.Errorf("decisions %v, want only the latest (false)", got)
	}
}

// scriptedElector makes the decisions it is given, then waits for the end.
type scriptedElector struct{ holds []bool }

func (e scriptedElector) Health(health.Transition) {}
func (e scriptedElector) Run(ctx context.Context, decide func(netip.Prefix, bool)) {
	for _, h := range e.holds {
		decide(vip4, h)
	}
	<-ctx.Done()
}

type countingJournal struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *countingJournal) Add(to, _, _ string) {
	c.mu.Lock()
	c.counts[to]++
	c.mu.Unlock()
}

// TestReannouncementIsNotATransition: holding a VIP held already (a
// re-announcement) is announced again but counted once.
func TestReannouncementIsNotATransition(t *testing.T) {
	j := &journal{seen: make(chan struct{}, 1)}
	cj := &countingJournal{counts: map[string]int{}}
	a := &Agent{Health: scriptedHealth{in: make(chan health.State)}, Elector: scriptedElector{[]bool{true, true, true, false}},
		Announcer: fakeAnnouncer{j}, Log: quiet, Journal: cj}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	j.waitFor(t, "hold 192.0.2.100/32", "hold 192.0.2.100/32", "hold 192.0.2.100/32", "release 192.0.2.100/32")
	cancel()
	<-done
	cj.mu.Lock()
	defer cj.mu.Unlock()
	if cj.counts["held"] != 1 || cj.counts["released"] != 1 {
		t.Fatalf("transitions %v, want one held and one released", cj.counts)
	}
}

type transitions chan health.Transition

func (h transitions) Run(ctx context.Context, out chan<- health.Transition) {
	for {
		select {
		case <-ctx.Done():
			return
		case tr := <-h:
			out <- tr
		}
	}
}

// recordingElector records the transitions the agent hands it.
type recordingElector struct{ j *journal }

func (e recordingElector) Health(tr health.Transition) {
	e.j.add(fmt.Sprintf("%s changed=%v settled=%v certain=%v", tr.State, tr.Changed, tr.Settled, tr.Certain))
}
func (e recordingElector) Run(ctx context.Context, _ func(netip.Prefix, bool)) {
	<-ctx.Done()
}

// TestAgentHandsOverEveryTransition: the elector hears every transition,
// in order, a change of Settled or Certain alone included (it owns what
// they mean: vrrp.Core.Health); only a change of state is journaled.
func TestAgentHandsOverEveryTransition(t *testing.T) {
	j := &journal{seen: make(chan struct{}, 1)}
	cj := &countingJournal{counts: map[string]int{}}
	h := make(transitions)
	a := &Agent{Health: h, Elector: recordingElector{j}, Announcer: fakeAnnouncer{&journal{seen: make(chan struct{}, 1)}},
		Log: quiet, Journal: cj}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	h <- health.Transition{State: health.Healthy, Changed: true}
	h <- health.Transition{State: health.Healthy, Settled: true}
	h <- health.Transition{State: health.Unhealthy, Changed: true}
	h <- health.Transition{State: health.Unhealthy, Certain: true}
	j.waitFor(t, "healthy changed=true settled=false certain=false", "healthy changed=false settled=true certain=false",
		"unhealthy changed=true settled=false certain=false", "unhealthy changed=false settled=false certain=true")
	cancel()
	<-done
	cj.mu.Lock()
	defer cj.mu.Unlock()
	if cj.counts["healthy"] != 1 || cj.counts["unhealthy"] != 1 {
		t.Fatalf("journaled %v, want one healthy and one unhealthy", cj.counts)
	}
}
