package health

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// stuckAPI is kube-apiserver with its etcd stopped: /readyz and /livez wait
// for etcd (here: until release), /livez/ping answers after pingDelay.
type stuckAPI struct {
	readyFails bool // /readyz answers 500 for etcd at once (its cached etcd error)
	pingStatus int  // 0: 200
	release    chan struct{}
	once       sync.Once
	pingDelay  time.Duration
	mu         sync.Mutex
	pings      int
}

func newStuckAPI(pingDelay time.Duration) *stuckAPI {
	return &stuckAPI{release: make(chan struct{}), pingDelay: pingDelay}
}

func (a *stuckAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/livez/ping" {
		a.mu.Lock()
		a.pings++
		a.mu.Unlock()
		time.Sleep(a.pingDelay)
		w.WriteHeader(cmp.Or(a.pingStatus, http.StatusOK))
		return
	}
	if a.readyFails && r.URL.Path == "/readyz" {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, readyzEtcd)
		return
	}
	a.mu.Lock()
	release := a.release
	a.mu.Unlock()
	select {
	case <-release:
		w.WriteHeader(http.StatusOK)
	case <-r.Context().Done():
	}
}

func (a *stuckAPI) unstick() {
	a.once.Do(func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		close(a.release)
	})
}

func newHungChecker(t *testing.T, a *stuckAPI, hungAfter, timeout time.Duration) *Checker {
	t.Helper()
	srv := httptest.NewTLSServer(a)
	t.Cleanup(func() { a.unstick(); srv.Close() })
	c := newDrainChecker(t, srv.URL)
	c.cfg.HungAfter, c.cfg.Timeout = hungAfter, timeout
	return c
}

// A check without an answer by HUNG_AFTER while the ping answers at once is
// a hung apiserver: known then, not at the timeout, and Unhealthy at once.
func TestCheckHung(t *testing.T) {
	a := newStuckAPI(0)
	// The ping gets a tenth of HUNG_AFTER, 200 ms: a new TLS connection on
	// a loaded machine under -race takes well below that.
	c := newHungChecker(t, a, 2*time.Second, 10*time.Second)
	r := c.Check(context.Background())
	if r.OK() || r.Outcome != Hung || r.Outcome == Refused {
		t.Fatalf("stuck /readyz, fast ping: %+v, want hung", r)
	}
	if r.Duration < 2*time.Second || r.Duration > 2*time.Second+200*time.Millisecond {
		t.Errorf("hung known after %v, want HUNG_AFTER (2s) and at most the ping's 200ms more", r.Duration)
	}
	// FAIL_THRESHOLD-1 failures: the fast re-check's verdict decides.
	out := make(chan Transition, 1)
	noVerdict(t, c, r, out)
	if r := c.Check(context.Background()); r.Outcome != Hung {
		t.Fatalf("the re-check: %+v, want hung again", r)
	} else if c.observe(context.Background(), r, out); (<-out).State != Unhealthy {
		t.Fatal("two hung checks: want unhealthy")
	}
	// Its etcd back, the apiserver answers: healthy again on the next check.
	a.unstick()
	if r := c.Check(context.Background()); !r.OK() {
		t.Fatalf("after etcd is back: %+v", r)
	}
}

// A slow ping is a slow apiserver (CPU, overload), not a hung one: the check
// waits on to its timeout and counts as one failure towards the threshold.
func TestCheckSlowIsNotHung(t *testing.T) {
	a := newStuckAPI(200 * time.Millisecond) // above a tenth of HUNG_AFTER
	c := newHungChecker(t, a, 300*time.Millisecond, time.Second)
	r := c.Check(context.Background())
	if r.OK() || r.Outcome == Hung || r.Duration < time.Second {
		t.Fatalf("stuck /readyz, slow ping: %+v, want a timeout, not hung", r)
	}
	noVerdict(t, c, r, make(chan Transition, 1))
}

// noVerdict has c observe r and fails t if the state changed.
func noVerdict(t *testing.T, c *Checker, r Result, out chan Transition) {
	t.Helper()
	c.observe(context.Background(), r, out)
	select {
	case tr := <-out:
		t.Fatalf("one check (%s) changed the state to %v", r.Reason, tr.State)
	default:
	}
}

// An answer that comes after HUNG_AFTER but within the timeout, with the
// ping slow meanwhile, is a healthy (slow) apiserver.
func TestCheckLateAnswerAfterSlowPing(t *testing.T) {
	a := newStuckAPI(150 * time.Millisecond)
	c := newHungChecker(t, a, 300*time.Millisecond, 3*time.Second)
	time.AfterFunc(700*time.Millisecond, a.unstick)
	if r := c.Check(context.Background()); !r.OK() || r.Outcome == Hung {
		t.Fatalf("answer at 700ms: %+v, want ok", r)
	}
}

// HUNG_AFTER 0, or not below the timeout, never asks the ping.
func TestCheckHungOff(t *testing.T) {
	for _, hung := range []time.Duration{0, 500 * time.Millisecond} {
		a := newStuckAPI(0)
		c := newHungChecker(t, a, hung, 500*time.Millisecond)
		if r := c.Check(context.Background()); r.OK() || r.Outcome == Hung {
			t.Errorf("HUNG_AFTER %v: %+v, want a plain timeout", hung, r)
		}
		a.mu.Lock()
		if a.pings != 0 {
			t.Errorf("HUNG_AFTER %v: %d pings, want none", hung, a.pings)
		}
		a.mu.Unlock()
	}
}

// A fast answer never costs a ping: the healthy apiserver sees one request
// per check, as before.
func TestCheckFastAnswerNoPing(t *testing.T) {
	a := newStuckAPI(0)
	a.unstick()
	c := newHungChecker(t, a, 300*time.Millisecond, time.Second)
	for range 3 {
		if r := c.Check(context.Background()); !r.OK() {
			t.Fatalf("%+v", r)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pings != 0 {
		t.Errorf("%d pings for fast answers, want none", a.pings)
	}
}

// /readyz failing at once for etcd (kube-apiserver's cached etcd error)
// hands the verdict to /livez; a /livez that hangs meanwhile is watched from
// the same point in time.
func TestCheckHungOnLivezAfterReadyzFailed(t *testing.T) {
	a := newStuckAPI(0)
	a.readyFails = true
	c := newHungChecker(t, a, 2*time.Second, 10*time.Second)
	if r := c.Check(context.Background()); r.OK() || r.Outcome != Hung {
		t.Fatalf("/readyz 500 for etcd, /livez stuck, fast ping: %+v, want hung", r)
	}
}

// A ping answered 403 (RBAC grants anonymous users only /livez itself) or
// 401 (anonymous auth off) is an answer all the same.
func TestCheckHungPingForbidden(t *testing.T) {
	for _, code := range []int{http.StatusForbidden, http.StatusUnauthorized} {
		a := newStuckAPI(0)
		a.pingStatus = code
		c := newHungChecker(t, a, time.Second, 5*time.Second)
		if r := c.Check(context.Background()); r.Outcome != Hung {
			t.Errorf("ping %d: %+v, want hung", code, r)
		}
	}
}

// The usual way in: a healthy check keeps its connection, the next one
// hangs on it.
func TestCheckHungOnKeptConnection(t *testing.T) {
	a := newStuckAPI(0)
	c := newHungChecker(t, a, time.Second, 5*time.Second)
	open := make(chan struct{})
	close(open)
	a.mu.Lock()
	stuck := a.release
	a.release = open // answers at once
	a.mu.Unlock()
	if r := c.Check(context.Background()); !r.OK() || c.probe.conn == nil {
		t.Fatalf("healthy check: %+v, kept connection %v", r, c.probe.conn != nil)
	}
	a.mu.Lock()
	a.release = stuck
	a.mu.Unlock()
	if r := c.Check(context.Background()); r.Outcome != Hung {
		t.Fatalf("second check on the kept connection: %+v, want hung", r)
	}
}

func TestThresholdsHung(t *testing.T) {
	th := thresholds{fail: 3, rise: 1}
	th.observe(true)
	if s, changed := th.hung(); changed || s != Healthy {
		t.Fatalf("one hung check: %v %v, want no verdict yet", s, changed)
	}
	if s, _ := th.observe(false); s != Unhealthy {
		t.Fatalf("hung, then a timeout: %v, want unhealthy", s)
	}
	th.observe(true)
	th.hung()
	if s, _ := th.observe(true); s != Healthy || th.failRun != 0 {
		t.Fatalf("hung, then ok: %v, %d failures counted", s, th.failRun)
	}
	one := thresholds{fail: 1, rise: 1}
	if s, _ := one.hung(); s != Unhealthy {
		t.Fatalf("FAIL_THRESHOLD 1: %v, want unhealthy at once", s)
	}
}

// judge is a StallJudge with a fixed answer that counts its questions.
type judge struct {
	network bool
	seen    string
	asked   int
}

func (j *judge) Mark() {}

func (j *judge) NetworkStall(context.Context) (bool, string) { j.asked++; return j.network, j.seen }

// A stall the judge calls the network's (etcd reads, its connections lose
// segments) is not hung: the check waits on, here for an answer at 1.5 s.
// One it calls etcd's is hung, and the reason says what was seen. HUNG_AFTER
// 1 s: the ping's tenth, 100 ms, holds a new TLS connection under -race on a
// loaded machine (at 300 ms, 30 ms did not: 3 of 3 runs beside the stress
// suite).
func TestCheckStallJudged(t *testing.T) {
	a := newStuckAPI(0)
	c := newHungChecker(t, a, time.Second, 3*time.Second)
	j := &judge{seen: "etcd's connections lose no segments"}
	c.cfg.Stalls = j
	if r := c.Check(context.Background()); r.Outcome != Hung || !strings.Contains(r.Reason, "(etcd's connections lose no segments)") || j.asked != 1 {
		t.Fatalf("a stall of etcd's: %+v (asked %d), want hung with what was seen", r, j.asked)
	}
	j.network = true
	time.AfterFunc(1500*time.Millisecond, a.unstick)
	if r := c.Check(context.Background()); !r.OK() || !r.Stalled || j.asked != 2 {
		t.Fatalf("a stall of the network's, answered at 1.5s: %+v (asked %d), want ok, stalled", r, j.asked)
	}
	if r := c.Check(context.Background()); !r.OK() || r.Stalled {
		t.Fatalf("answered at once: %+v, want ok, not stalled", r)
	}
}

// A slow ping decides alone: the judge is not asked.
func TestCheckStallJudgeNotAskedOnSlowPing(t *testing.T) {
	a := newStuckAPI(150 * time.Millisecond)
	c := newHungChecker(t, a, 300*time.Millisecond, 600*time.Millisecond)
	j := &judge{}
	c.cfg.Stalls = j
	if r := c.Check(context.Background()); r.Outcome == Hung || j.asked != 0 {
		t.Fatalf("slow ping: %+v, judge asked %d times, want a timeout and no question", r, j.asked)
	}
}

// An answer that comes while the judge is asked is an answer, not a hang
// (HUNG_AFTER 1 s: as TestCheckStallJudged).
func TestCheckAnsweredWhileJudged(t *testing.T) {
	a := newStuckAPI(0)
	c := newHungChecker(t, a, time.Second, 3*time.Second)
	c.cfg.Stalls = judgeFunc(func() (bool, string) {
		a.unstick()
		time.Sleep(50 * time.Millisecond) // the answer is on its way meanwhile
		return false, "etcd's connections lose no segments"
	})
	if r := c.Check(context.Background()); !r.OK() || r.Outcome == Hung || r.Stalled {
		t.Fatalf("answered while the judge was asked: %+v, want ok, not stalled (the judge said etcd's)", r)
	}
}

type judgeFunc func() (bool, string)

func (f judgeFunc) Mark() {}

func (f judgeFunc) NetworkStall(context.Context) (bool, string) { return f() }
