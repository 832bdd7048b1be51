package health

import "time"

// How long a check waits before it asks whether the apiserver is hung
// learns from how long the apiserver has taken to answer: a stall is hung
// only when it is much longer than any answer of the last minute. On a quiet
// node answers take milliseconds and the bound is HUNG_AFTER; where etcd's
// traffic is being lost and retransmitted (a lossy segment: every TCP
// retransmission waits 200 ms or more) answers of several hundred
// milliseconds come every minute, and a stall of a second or two is that
// loss again, not a stopped etcd. The idea is TCP's retransmission timer
// and the phi accrual failure detector's: suspicion relative to what was
// seen, not a fixed time.

const (
	// answersKept is how many answered checks the bound looks back on:
	// a minute at the default HEALTH_INTERVAL.
	answersKept = 60
	// hungFactor is how much longer than the slowest kept answer a check
	// must wait before it asks whether the apiserver is hung.
	hungFactor = 2
)

// answers keeps the durations of the last answered checks.
type answers struct {
	d    [answersKept]time.Duration
	next int
}

// add records one answered check's duration.
func (a *answers) add(d time.Duration) {
	a.d[a.next] = d
	a.next = (a.next + 1) % answersKept
}

// hungAfter is how long a check waits before it asks whether the apiserver
// is hung: base (HUNG_AFTER), or hungFactor times the slowest kept answer
// if that is longer.
func (a *answers) hungAfter(base time.Duration) time.Duration {
	slowest := time.Duration(0)
	for _, d := range a.d {
		slowest = max(slowest, d)
	}
	return max(base, hungFactor*slowest)
}
