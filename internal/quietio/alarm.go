package quietio

import (
	"sync"
	"time"
)

// Alarm calls a function at a set time, on a Timer (a timerfd). It stands
// in for a runtime timer where one is set and stopped again and again — a
// request's timeout, a connection's read deadline: a stopped runtime timer
// stays in the runtime's heap until its time and wakes the idle process
// then all the same. One call is set at a time. After Clear returns the
// function is not running and does not run until the next Set; it runs on
// the alarm's goroutine and must not call Set or Clear.
type Alarm struct {
	t      *Timer
	mu     sync.Mutex
	at     time.Time
	fn     func()
	closed chan struct{}
	once   sync.Once
}

// NewAlarm returns an alarm with nothing set; Close ends it.
func NewAlarm() *Alarm {
	a := &Alarm{t: NewTimer(time.Hour), closed: make(chan struct{})}
	a.t.Stop()
	go a.run()
	return a
}

// Set makes fn run at at (at once if it is past), replacing what was set.
func (a *Alarm) Set(at time.Time, fn func()) {
	a.mu.Lock()
	a.at, a.fn = at, fn
	a.mu.Unlock()
	a.t.Reset(time.Until(at))
}

// Clear unsets the alarm; the function set is not running when it returns.
func (a *Alarm) Clear() {
	a.mu.Lock()
	a.fn = nil
	a.mu.Unlock()
	a.t.Stop()
}

// Close ends the alarm's goroutine and timer.
func (a *Alarm) Close() {
	a.once.Do(func() {
		a.Clear()
		close(a.closed)
		a.t.Close()
	})
}

func (a *Alarm) run() {
	for {
		select {
		case <-a.closed:
			return
		case <-a.t.C():
		}
		a.mu.Lock()
		if a.fn != nil && !time.Now().Before(a.at) { // not a tick of an earlier Set
			fn := a.fn
			a.fn = nil
			fn()
		}
		a.mu.Unlock()
	}
}
