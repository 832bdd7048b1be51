package health

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestTuneThresholds: a reload's thresholds count from the next check.
func TestTuneThresholds(t *testing.T) {
	api, c := healthyServer(t)
	var results atomic.Int64
	c.OnResult = func(Result) { results.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Transition, 4)
	done := make(chan struct{})
	go func() { c.Run(ctx, out); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	wantTransition(t, out, Healthy)
	timing := Timing{Interval: 10 * time.Millisecond, Timeout: 200 * time.Millisecond, FailThreshold: 1000, RiseThreshold: 1}
	c.Tune(timing)
	for n := results.Load(); results.Load() < n+2; { // applied before the next check
		time.Sleep(5 * time.Millisecond)
	}
	api.status.Store(500)
	for n := results.Load(); results.Load() < n+20; {
		time.Sleep(5 * time.Millisecond)
	}
	for len(out) > 0 {
		if tr := <-out; tr.Changed { // settled, then unsettled by the first failure: no state change
			t.Fatalf("transition to %v after 20 failures with a threshold of 1000", tr.State)
		}
	}
	timing.FailThreshold = 1
	c.Tune(timing)
	wantTransition(t, out, Unhealthy) // the threshold lowered
}

// TestSettledAfterARiseReload: a reload that lowers RISE_THRESHOLD between
// two checks still tells the elector when the node settles (the checker
// compares with what it sent, not with the state before the check).
func TestSettledAfterARiseReload(t *testing.T) {
	_, c := healthyServer(t)
	c.judge.thr.rise = 3
	out := make(chan Transition, 16)
	ctx := context.Background()
	for _, ok := range []bool{true, true, true, false, true, true} {
		c.observe(ctx, Result{Outcome: passed(ok)}, out)
	}
	var last Transition
	for len(out) > 0 {
		last = <-out
	}
	if last.State != Healthy || last.Settled {
		t.Fatalf("after a failure and two passes at rise 3: %+v, want healthy, unsettled", last)
	}
	c.judge.thr.rise = 1 // a reload (tune.go), between two checks
	c.observe(ctx, Result{Outcome: Passed}, out)
	if len(out) == 0 {
		t.Fatal("settled after the reload, and nothing sent")
	}
	if tr := <-out; !tr.Settled || tr.Changed {
		t.Errorf("after the reload: %+v, want settled, no state change", tr)
	}
}
