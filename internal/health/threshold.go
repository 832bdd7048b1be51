package health

import "time"

// State is the health of the local apiserver as the thresholds see it.
type State int

// The health states. A checker starts Unknown and leaves it after the first
// FailThreshold failures or RiseThreshold successes.
const (
	Unknown State = iota
	Healthy
	Unhealthy
	// Draining: the apiserver has begun a graceful shutdown; it still
	// serves, but the node hands the VIP over now.
	Draining
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Healthy:
		return "healthy"
	case Unhealthy:
		return "unhealthy"
	case Draining:
		return "draining"
	default:
		return "unknown"
	}
}

// thresholds counts consecutive results and decides the state.
type thresholds struct {
	fail, rise     int
	okRun, failRun int
	state          State
	// steadyRun: passes since the latest failure, but those that stalled
	// (Result.Stalled).
	steadyRun int
}

// observe records one result and returns the state and whether it changed.
func (t *thresholds) observe(ok bool) (State, bool) {
	if ok {
		t.okRun, t.failRun = t.okRun+1, 0
	} else {
		t.failRun, t.okRun = t.failRun+1, 0
	}
	next := t.state
	switch {
	case ok && t.state != Healthy && t.okRun >= t.rise:
		next = Healthy
	case !ok && t.state != Unhealthy && t.failRun >= t.fail:
		next = Unhealthy
	}
	changed := next != t.state
	t.state = next
	return next, changed
}

// drain records a check that saw the apiserver shutting down: certain at
// once, no threshold. Failures after it count towards Unhealthy as usual.
func (t *thresholds) drain() (State, bool) {
	t.okRun, t.failRun = 0, 0
	changed := t.state != Draining
	t.state = Draining
	return Draining, changed
}

// refused records a check whose new connection was refused or reset: no
// process serves the apiserver's port (stopped, killed, not started yet),
// which is certain, unlike a slow or failing answer: Unhealthy at once.
func (t *thresholds) refused() (State, bool) {
	t.failRun, t.okRun = max(t.failRun+1, t.fail), 0
	changed := t.state != Unhealthy
	t.state = Unhealthy
	return Unhealthy, changed
}

// hung records a check that found the apiserver hung (its ping answers at
// once, the check not at all) as FAIL_THRESHOLD-1 failures: one more
// failed check of any kind decides, the fast re-check's. Not at once: an
// etcd leader election stalls every apiserver for a second or two, and a
// node whose check noticed first would hand the VIP to one that has not
// noticed yet.
func (t *thresholds) hung() (State, bool) {
	t.failRun = max(t.failRun, t.fail-2)
	return t.observe(false)
}

// judge records one check's result by its kind: a drain or a refused
// connection decides at once, a hung apiserver all but decides, anything
// else counts towards a threshold.
func (t *thresholds) judge(r Result) (State, bool) {
	switch {
	case !r.OK():
		t.steadyRun = 0
	case !r.Stalled:
		t.steadyRun++
	}
	switch r.Outcome {
	case Drained:
		return t.drain()
	case Refused:
		return t.refused()
	case Hung:
		return t.hung()
	default:
		return t.observe(r.OK())
	}
}

// SettleRun is how many checks a healthy node must have passed since its
// latest failure, not counting those that passed only after a stall blamed
// on the network (Result.Stalled), to take the VIP from a holder that fails
// its checks (L2: a master at the fail-open priority). A node whose latest
// check failed, or that is healthy again after one passed check, is no
// better a holder than the failing one: the failure may be one every node
// shares (loss on the segment stalls every etcd now and then), and a move
// then only costs the clients a reconnect. Stalled passes do not count
// because a check that outlasts the interval is followed by the next at
// once: two passes a few milliseconds apart after a stall of seconds say
// little. They do not reset the count either, so a backup whose checks
// stall now and then still settles (testdata/judge/settle-after-stalls.txt).
const SettleRun = 2

// SettleWithin is how long, at most, a healthy node that has not settled
// waits before it takes the VIP from a holder that fails its checks (L2: a
// master at the fail-open priority) for health checks every interval: ten
// checks. A failure every node shares (loss, an etcd election) makes the
// holder fail for a check or a few; one that lasts this long is the
// holder's own, and settling, which a lossy network may never let a node
// reach, must not keep the VIP on it.
func SettleWithin(interval time.Duration) time.Duration { return 10 * interval }

// settled says whether the apiserver is healthy and has passed
// max(RiseThreshold, SettleRun) checks without a stall since its latest
// failure.
func (t *thresholds) settled() bool {
	return t.state == Healthy && t.steadyRun >= max(t.rise, SettleRun)
}

// counting says whether failures are being counted towards the threshold
// (FastInterval applies).
func (t *thresholds) counting() bool { return t.failRun > 0 && t.state != Unhealthy }

// Judge turns check results into the transitions the election hears:
// the thresholds, settling and certainty. It has no clock and no
// goroutine: Checker.Run drives it with real checks, the simulation with
// its own.
type Judge struct {
	thr thresholds
	// sentSettled, sentCertain: the Settled and Certain of the latest
	// transition returned.
	sentSettled, sentCertain bool
	// inDoubt: Closed returned a transition in doubt and no result has
	// been observed since; last: the latest result observed.
	inDoubt bool
	last    Result
}

// NewJudge returns the rule for fail and rise consecutive results.
func NewJudge(fail, rise int) *Judge { return &Judge{thr: thresholds{fail: fail, rise: rise}} }

// SetThresholds changes the thresholds from the next result on (a reload).
func (j *Judge) SetThresholds(fail, rise int) { j.thr.fail, j.thr.rise = fail, rise }

// Observe records one result and returns the transition it makes, if any:
// a change of state, or of Settled or Certain against the latest one
// returned (a reload's RISE_THRESHOLD may change settling between checks).
// A result after Closed always makes one: it ends the doubt.
func (j *Judge) Observe(r Result) (Transition, bool) {
	state, changed := j.thr.judge(r)
	settled := j.thr.settled()
	certain := state != Healthy && r.Certain()
	j.last = r
	if !changed && settled == j.sentSettled && certain == j.sentCertain && !j.inDoubt {
		return Transition{}, false
	}
	j.sentSettled, j.sentCertain, j.inDoubt = settled, certain, false
	return Transition{State: state, Changed: changed, Settled: settled, Certain: certain, Last: r}, true
}

// Closed records that the apiserver closed the kept connection, which
// starts a check at once: until its result is observed, the node is in
// doubt (Transition.InDoubt). It returns the transition that says so,
// false when the doubt began already.
func (j *Judge) Closed() (Transition, bool) {
	if j.inDoubt {
		return Transition{}, false
	}
	j.inDoubt = true
	return Transition{State: j.thr.state, Settled: j.sentSettled, Certain: j.sentCertain, InDoubt: true, Last: j.last}, true
}

// Next is the time from one check's start to the next's: fast while
// failures are being counted towards the threshold, else interval.
func (j *Judge) Next(interval, fast time.Duration) time.Duration {
	if j.thr.counting() && fast > 0 && fast < interval {
		return fast
	}
	return interval
}

// State is the state as of the latest result.
func (j *Judge) State() State { return j.thr.state }

// Settled is thresholds.settled: healthy long enough to take the VIP from
// a failing holder.
func (j *Judge) Settled() bool { return j.thr.settled() }

// Failures is the count of consecutive failed checks.
func (j *Judge) Failures() int { return j.thr.failRun }
