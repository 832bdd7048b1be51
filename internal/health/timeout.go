package health

import (
	"context"
	"errors"
	"time"

	"github.com/novaedge/cpvip/internal/quietio"
)

// withTimeout is context.WithTimeout on the checker's alarm (a timerfd,
// quietio.Alarm). context.WithTimeout arms a runtime timer, which stays in
// the runtime's heap when the check ends a millisecond later and wakes the
// idle daemon at its time all the same: at one check a second, a wake-up
// burst a second for nothing. One check at a time uses it.
func (c *Checker) withTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if c.timeout == nil {
		c.timeout = quietio.NewAlarm()
	}
	end := time.Now().Add(d)
	ctx, cancel := context.WithCancelCause(parent)
	c.timeout.Set(end, func() { cancel(context.DeadlineExceeded) })
	return timeoutCtx{ctx, end}, func() {
		c.timeout.Clear()
		cancel(context.Canceled)
	}
}

// stop releases what the checks kept: the connections and the alarms.
func (c *Checker) stop() {
	c.probe.stop()
	c.pinger.stop()
	if c.timeout != nil {
		c.timeout.Close()
		c.timeout = nil
	}
}

// timeoutCtx is a context that ends at end (or with its parent) and says
// so as context.WithTimeout's does: Deadline is end, Err after it
// context.DeadlineExceeded.
type timeoutCtx struct {
	context.Context
	end time.Time
}

func (c timeoutCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.end) {
		return d, true
	}
	return c.end, true
}

func (c timeoutCtx) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}
