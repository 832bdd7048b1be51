package health

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// readyAPI answers /livez and /readyz separately, and counts the requests.
type readyAPI struct {
	mu          sync.Mutex
	live, ready int
	readyBody   string
	paths       []string
}

func (a *readyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.paths = append(a.paths, r.URL.Path)
	if r.URL.Path == "/readyz" {
		w.WriteHeader(a.ready)
		io.WriteString(w, a.readyBody)
		return
	}
	w.WriteHeader(a.live)
}

func (a *readyAPI) set(live, ready int, body string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live, a.ready, a.readyBody, a.paths = live, ready, body, nil
}

func (a *readyAPI) asked() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.paths, " ")
}

// kube-apiserver's /readyz body when a check fails: every check listed.
const (
	readyzShutdown = "[+]ping ok\n[+]etcd ok\n[+]informer-sync ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n"
	readyzEtcd     = "[+]ping ok\n[-]etcd-readiness failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n"
)

func newDrainChecker(t *testing.T, base string) *Checker {
	t.Helper()
	c, err := New(Config{URL: base + "/livez", ReadyURL: base + "/readyz", Interval: time.Second, FastInterval: 100 * time.Millisecond,
		Timeout: time.Second, FailThreshold: 3, RiseThreshold: 1, TokenPath: filepath.Join(t.TempDir(), "absent")},
		slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// healthyDrainChecker returns a server whose /readyz and /livez pass and a
// checker of it.
func healthyDrainChecker(t *testing.T) (*httptest.Server, *Checker) {
	t.Helper()
	api := &readyAPI{}
	api.set(200, 200, "ok")
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	return srv, newDrainChecker(t, srv.URL)
}

// TestCheckWithDrain: /readyz first; /livez only when /readyz fails for a
// reason other than the shutdown check or authentication.
func TestCheckWithDrain(t *testing.T) {
	api := &readyAPI{}
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	c := newDrainChecker(t, srv.URL)
	for _, tt := range []struct {
		name         string
		live, ready  int
		body         string
		ok, draining bool
		status       int
		asked        string
	}{
		{"ready", 200, 200, "ok", true, false, 200, "/readyz"},
		{"shutting down: livez still 200", 200, 500, readyzShutdown, false, true, 500, "/readyz"},
		{"readyz fails for etcd, livez passes", 200, 500, readyzEtcd, true, false, 200, "/readyz /livez"},
		{"readyz and livez fail", 500, 500, readyzEtcd, false, false, 500, "/readyz /livez"},
		{"no token yet: 401 as livez would say", 401, 401, "", true, false, 401, "/readyz"},
		{"RBAC not in yet: 403 as livez would say", 403, 403, "", false, false, 403, "/readyz"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api.set(tt.live, tt.ready, tt.body)
			r := c.Check(context.Background())
			if r.OK() != tt.ok || (r.Outcome == Drained) != tt.draining || r.Status != tt.status {
				t.Errorf("got %+v, want ok=%v draining=%v status=%d", r, tt.ok, tt.draining, tt.status)
			}
			if got := api.asked(); got != tt.asked {
				t.Errorf("asked %q, want %q", got, tt.asked)
			}
		})
	}
}

func TestThresholdsDrain(t *testing.T) {
	th := thresholds{fail: 3, rise: 1}
	th.observe(true)
	if s, changed := th.drain(); s != Draining || !changed {
		t.Fatalf("drain from healthy: %v %v", s, changed)
	}
	if _, changed := th.drain(); changed {
		t.Fatal("a second drain result is no change")
	}
	for i := range 3 { // the port closes: failures count as usual
		if s, _ := th.observe(false); (i < 2) != (s == Draining) {
			t.Fatalf("after %d failures: %v", i+1, s)
		}
	}
	if th.state != Unhealthy {
		t.Fatalf("after the threshold: %v", th.state)
	}
	if s, _ := th.observe(true); s != Healthy {
		t.Fatalf("the restarted apiserver: %v", s)
	}
}

func TestNextIntervalFastAfterFailure(t *testing.T) {
	j := NewJudge(3, 1)
	steps := []struct {
		ok   bool
		want time.Duration
	}{
		{true, time.Second},             // healthy
		{false, 100 * time.Millisecond}, // 1 of 3: check again soon
		{false, 100 * time.Millisecond}, // 2 of 3
		{false, time.Second},            // unhealthy: decided, back to the interval
		{true, time.Second},             // healthy again
	}
	for i, s := range steps {
		j.thr.observe(s.ok)
		if got := j.Next(time.Second, 100*time.Millisecond); got != s.want {
			t.Fatalf("step %d: %s, want %s", i, got, s.want)
		}
	}
	j.thr.observe(false)
	if got := j.Next(time.Second, 0); got != time.Second {
		t.Fatalf("fast interval off: %s", got)
	}
}

// TestIdleNoticesClosedConnection: the wait between checks ends when the
// server closes the kept connection, runs to its deadline otherwise, and
// ends at once when the context does.
func TestIdleNoticesClosedConnection(t *testing.T) {
	srv, c := healthyDrainChecker(t)
	ctx := context.Background()
	if r := c.Check(ctx); !r.OK() {
		t.Fatal(r)
	}
	start := time.Now()
	if c.probe.idle(ctx, start.Add(50*time.Millisecond)) || time.Since(start) < 40*time.Millisecond {
		t.Fatalf("open connection: idle returned early (%s)", time.Since(start))
	}
	go func() { time.Sleep(20 * time.Millisecond); srv.CloseClientConnections() }()
	if !c.probe.idle(ctx, time.Now().Add(time.Minute)) {
		t.Fatal("closed connection not reported")
	}
	if c.probe.conn != nil {
		t.Fatal("a closed connection must not be kept")
	}
	if r := c.Check(ctx); !r.OK() {
		t.Fatalf("check after the close: %+v", r)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if c.probe.idle(cctx, time.Now().Add(time.Minute)) {
		t.Fatal("cancellation reported as a closed connection")
	}
	// No kept connection: a plain wait, cancellable too.
	c.probe.close()
	if c.probe.idle(cctx, time.Now().Add(time.Minute)) {
		t.Fatal("no connection: nothing to report")
	}
}

// heldAPI answers its first request, closes the connection of the
// second without an answer when cut is set, and holds every later one
// until release is closed.
type heldAPI struct {
	readyAPI
	cut     bool
	served  atomic.Int32
	release chan struct{}
}

func (h *heldAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch n := h.served.Add(1); {
	case n == 2 && h.cut:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case n > 1:
		<-h.release
	}
	h.readyAPI.ServeHTTP(w, r)
}

// TestRunSaysInDoubtWhileTheCheckAfterACloseRuns: the apiserver closing
// the kept connection sends a transition in doubt at once, while the
// check it starts is still unanswered; that check's result ends the
// doubt, even a pass that changes nothing else.
func TestRunSaysInDoubtWhileTheCheckAfterACloseRuns(t *testing.T) {
	for _, cut := range []bool{false, true} {
		t.Run(map[bool]string{false: "between checks", true: "during a check"}[cut], func(t *testing.T) { inDoubtAfterAClose(t, cut) })
	}
}

// inDoubtAfterAClose: the apiserver closes the kept connection between
// checks, or (cut) during one, whose request is then tried again on a new
// connection.
func inDoubtAfterAClose(t *testing.T, cut bool) {
	api := &heldAPI{cut: cut, release: make(chan struct{})}
	api.set(200, 200, "ok")
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	released := sync.OnceFunc(func() { close(api.release) })
	t.Cleanup(released)
	c := newDrainChecker(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Transition)
	done := make(chan struct{})
	go func() { c.Run(ctx, out); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	next := func(within time.Duration) Transition {
		t.Helper()
		select {
		case tr := <-out:
			return tr
		case <-time.After(within):
			t.Fatalf("no transition within %s", within)
		}
		return Transition{}
	}
	if tr := next(5 * time.Second); tr.State != Healthy || tr.InDoubt {
		t.Fatalf("first transition %+v, want healthy", tr)
	}
	within := c.cfg.Timeout / 2
	if cut {
		within += c.cfg.Interval // the next check's request is cut
	} else {
		srv.CloseClientConnections()
	}
	// The check the close started (or its request tried again) is held
	// by the server meanwhile.
	if tr := next(within); tr.State != Healthy || !tr.InDoubt || tr.Changed {
		t.Fatalf("after the close: %+v, want healthy in doubt, unchanged", tr)
	}
	released()
	if tr := next(5 * time.Second); tr.State != Healthy || tr.InDoubt {
		t.Fatalf("after the check: %+v, want healthy, no longer in doubt", tr)
	}
}
