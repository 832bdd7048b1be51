package health

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestTuneThresholds: a reload's thresholds count from the next check.
func TestTuneThresholds(t *testing.T) {
	api := &apiserver{}
	api.status.Store(200)
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	c := newChecker(t, srv.URL+"/livez", "/nonexistent", "")
	var results atomic.Int64
	c.OnResult = func(Result) { results.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Transition, 4)
	done := make(chan struct{})
	go func() { c.Run(ctx, out); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	next := func() Transition {
		t.Helper()
		select {
		case tr := <-out:
			return tr
		case <-time.After(10 * time.Second):
			t.Fatal("no transition")
		}
		return Transition{}
	}
	if tr := next(); tr.State != Healthy {
		t.Fatalf("first transition %v", tr.State)
	}
	timing := Timing{Interval: 10 * time.Millisecond, Timeout: 200 * time.Millisecond, FailThreshold: 1000, RiseThreshold: 1}
	c.Tune(timing)
	for n := results.Load(); results.Load() < n+2; { // applied before the next check
		time.Sleep(5 * time.Millisecond)
	}
	api.status.Store(500)
	for n := results.Load(); results.Load() < n+20; {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case tr := <-out:
		t.Fatalf("transition to %v after 20 failures with a threshold of 1000", tr.State)
	default:
	}
	timing.FailThreshold = 1
	c.Tune(timing)
	if tr := next(); tr.State != Unhealthy {
		t.Fatalf("transition %v, want unhealthy after the threshold was lowered", tr.State)
	}
}
