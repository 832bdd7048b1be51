package health

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// stuckAPI is kube-apiserver with its etcd stopped: /readyz and /livez wait
// for etcd (here: until release), /livez/ping answers after pingDelay.
type stuckAPI struct {
	readyFails bool // /readyz answers 500 for etcd at once (its cached etcd error)
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
		w.WriteHeader(http.StatusOK)
		return
	}
	if a.readyFails && r.URL.Path == "/readyz" {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, readyzEtcd)
		return
	}
	select {
	case <-a.release:
		w.WriteHeader(http.StatusOK)
	case <-r.Context().Done():
	}
}

func (a *stuckAPI) unstick() { a.once.Do(func() { close(a.release) }) }

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
	if r.OK || !r.Hung || r.Refused {
		t.Fatalf("stuck /readyz, fast ping: %+v, want hung", r)
	}
	if r.Duration < 2*time.Second || r.Duration > 2*time.Second+200*time.Millisecond {
		t.Errorf("hung known after %v, want HUNG_AFTER (2s) and at most the ping's 200ms more", r.Duration)
	}
	out := make(chan Transition, 1)
	c.observe(context.Background(), r, out)
	if tr := <-out; tr.State != Unhealthy {
		t.Fatalf("one hung check: %v, want unhealthy at once", tr.State)
	}
	// Its etcd back, the apiserver answers: healthy again on the next check.
	a.unstick()
	if r := c.Check(context.Background()); !r.OK {
		t.Fatalf("after etcd is back: %+v", r)
	}
}

// A slow ping is a slow apiserver (CPU, overload), not a hung one: the check
// waits on to its timeout and counts as one failure towards the threshold.
func TestCheckSlowIsNotHung(t *testing.T) {
	a := newStuckAPI(200 * time.Millisecond) // above a tenth of HUNG_AFTER
	c := newHungChecker(t, a, 300*time.Millisecond, time.Second)
	r := c.Check(context.Background())
	if r.OK || r.Hung || r.Duration < time.Second {
		t.Fatalf("stuck /readyz, slow ping: %+v, want a timeout, not hung", r)
	}
	out := make(chan Transition, 1)
	c.observe(context.Background(), r, out)
	select {
	case tr := <-out:
		t.Fatalf("one slow check changed the state to %v", tr.State)
	default:
	}
}

// An answer that comes after HUNG_AFTER but within the timeout, with the
// ping slow meanwhile, is a healthy (slow) apiserver.
func TestCheckLateAnswerAfterSlowPing(t *testing.T) {
	a := newStuckAPI(150 * time.Millisecond)
	c := newHungChecker(t, a, 300*time.Millisecond, 3*time.Second)
	time.AfterFunc(700*time.Millisecond, a.unstick)
	if r := c.Check(context.Background()); !r.OK || r.Hung {
		t.Fatalf("answer at 700ms: %+v, want ok", r)
	}
}

// HUNG_AFTER 0, or not below the timeout, never asks the ping.
func TestCheckHungOff(t *testing.T) {
	for _, hung := range []time.Duration{0, 500 * time.Millisecond} {
		a := newStuckAPI(0)
		c := newHungChecker(t, a, hung, 500*time.Millisecond)
		if r := c.Check(context.Background()); r.OK || r.Hung {
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
		if r := c.Check(context.Background()); !r.OK {
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
	if r := c.Check(context.Background()); r.OK || !r.Hung {
		t.Fatalf("/readyz 500 for etcd, /livez stuck, fast ping: %+v, want hung", r)
	}
}
