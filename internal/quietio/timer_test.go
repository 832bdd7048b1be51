package quietio

import (
	"testing"
	"time"
)

// got says whether a tick comes within d.
func got(t *Timer, d time.Duration) bool {
	select {
	case <-t.C():
		return true
	case <-time.After(d):
		return false
	}
}

// TestTimerFiresOnceOnTime: after d, not before; once; again after a Reset;
// never after a Stop; Reset before it fires puts it off.
func TestTimerFiresOnceOnTime(t *testing.T) {
	start := time.Now()
	tm := NewTimer(50 * time.Millisecond)
	defer tm.Close()
	if !got(tm, time.Second) {
		t.Fatal("no tick within a second")
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("fired after %v, before 50ms", took)
	}
	if got(tm, 100*time.Millisecond) {
		t.Fatal("a one-shot timer fired twice")
	}
	tm.Reset(0)
	if !got(tm, time.Second) {
		t.Fatal("Reset(0): no tick")
	}
	tm.Reset(30 * time.Millisecond)
	tm.Stop()
	if got(tm, 100*time.Millisecond) {
		t.Fatal("fired after Stop")
	}
	start = time.Now()
	tm.Reset(30 * time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	tm.Reset(60 * time.Millisecond)
	if !got(tm, time.Second) {
		t.Fatal("no tick after a second Reset")
	}
	if took := time.Since(start); took < 70*time.Millisecond {
		t.Fatalf("fired %v after the first Reset: the second (60ms, 10ms later) did not put it off", took)
	}
}

// TestTickerRepeats: a ticker fires every period until stopped; a closed
// one never again.
func TestTickerRepeats(t *testing.T) {
	tk := NewTicker(20 * time.Millisecond)
	for i := range 3 {
		if !got(tk, time.Second) {
			t.Fatalf("tick %d missing", i+1)
		}
	}
	tk.Stop()
	got(tk, 0) // one armed before Stop may come
	if got(tk, 100*time.Millisecond) {
		t.Fatal("ticked after Stop")
	}
	tk.Reset(10 * time.Millisecond)
	if !got(tk, time.Second) {
		t.Fatal("no tick after Reset")
	}
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	got(tk, 0)
	if got(tk, 100*time.Millisecond) {
		t.Fatal("ticked after Close")
	}
}

// TestAlarm: the function runs at its time, not before, once; a Clear
// before it keeps it from running; a later Set replaces an earlier one.
func TestAlarm(t *testing.T) {
	a := NewAlarm()
	defer a.Close()
	ran := make(chan time.Time, 4)
	start := time.Now()
	a.Set(start.Add(40*time.Millisecond), func() { ran <- time.Now() })
	select {
	case at := <-ran:
		if at.Sub(start) < 40*time.Millisecond {
			t.Fatalf("ran after %v, before 40ms", at.Sub(start))
		}
	case <-time.After(time.Second):
		t.Fatal("did not run within a second")
	}
	a.Set(time.Now().Add(30*time.Millisecond), func() { ran <- time.Now() })
	a.Clear()
	a.Set(time.Now().Add(60*time.Millisecond), func() { ran <- time.Now() })
	a.Set(time.Now().Add(20*time.Millisecond), func() { ran <- time.Now() })
	time.Sleep(150 * time.Millisecond)
	if len(ran) != 1 {
		t.Fatalf("ran %d times, want once (the last Set)", len(ran))
	}
}
