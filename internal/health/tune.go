package health

import "time"

// Timing is what a reload may change in a running Checker.
type Timing struct {
	Interval, FastInterval, Timeout, HungAfter time.Duration
	FailThreshold, RiseThreshold               int
}

// Tune changes the timing from the next check on; only the latest call
// counts. Safe from any goroutine: Run applies it between two checks.
func (c *Checker) Tune(t Timing) {
	select {
	case <-c.tune:
	default:
	}
	c.tune <- t
}

// retune applies a pending Tune; Run's goroutine only.
func (c *Checker) retune() {
	select {
	case t := <-c.tune:
		c.cfg.Interval, c.cfg.FastInterval, c.cfg.Timeout, c.cfg.HungAfter = t.Interval, t.FastInterval, t.Timeout, t.HungAfter
		c.cfg.FailThreshold, c.cfg.RiseThreshold = t.FailThreshold, t.RiseThreshold
		c.judge.SetThresholds(t.FailThreshold, t.RiseThreshold)
		c.log.Info("Health check timing changed", "interval", t.Interval, "fast_interval", t.FastInterval,
			"timeout", t.Timeout, "hung_after", t.HungAfter, "fail_threshold", t.FailThreshold, "rise_threshold", t.RiseThreshold)
	default:
	}
}
