package health

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
