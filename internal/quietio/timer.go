package quietio

import (
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Timer is a timer on a timerfd (CLOCK_MONOTONIC), waited for in the
// netpoller and read by a raw system call. A runtime timer (time.Timer)
// costs the idle daemon about six wake-ups each time it fires, this one
// one: the runtime's sysmon thread sleeps until the next runtime timer, so
// every runtime timer wakes it, and the netpoller's epoll wait counts in
// whole milliseconds, so it wakes once early for each. A timerfd is one
// file descriptor, woken by the kernel on time, and nothing in reading it
// enters the scheduler.
//
// C delivers at most one tick at a time (ticks coalesce), and may deliver
// one armed before the latest Reset or Stop: a receiver checks what is
// due. Where no timerfd can be made, a runtime timer stands in.
type Timer struct {
	c      chan struct{}
	fd     int
	f      *os.File
	rc     syscall.RawConn
	buf    [8]byte
	read   func(fd uintptr) bool // t.read1, bound once
	spec   unix.ItimerSpec
	mu     sync.Mutex // guards spec, armed, closed and the fallback
	armed  bool
	closed bool // the descriptor is closed: arm does nothing
	period time.Duration
	rt     *time.Timer // the fallback; nil with a timerfd
}

// NewTimer returns a timer that fires once after d (d <= 0: at once).
func NewTimer(d time.Duration) *Timer {
	t := newTimer(0)
	t.Reset(d)
	return t
}

// NewTicker returns a timer that fires every period, the first after one.
func NewTicker(period time.Duration) *Timer {
	t := newTimer(period)
	t.Reset(period)
	return t
}

func newTimer(period time.Duration) *Timer {
	t := &Timer{c: make(chan struct{}, 1), period: period}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err == nil {
		t.fd, t.f = fd, os.NewFile(uintptr(fd), "timerfd")
		t.rc, err = t.f.SyscallConn()
	}
	if err != nil {
		if t.f != nil {
			t.f.Close()
		}
		t.f = nil
		t.rt = time.AfterFunc(time.Hour, t.tick)
		t.rt.Stop()
		return t
	}
	t.read = t.read1
	go t.run()
	return t
}

// C is where the ticks come.
func (t *Timer) C() <-chan struct{} { return t.c }

// Reset makes the timer fire after d (d <= 0: at once), and then every
// period for a ticker; a tick armed before may still come.
func (t *Timer) Reset(d time.Duration) {
	t.arm(max(d, 1))
}

// Stop disarms the timer; a tick armed before may still come.
func (t *Timer) Stop() { t.arm(0) }

// Close stops the timer for good and ends its reader.
func (t *Timer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed, t.armed = true, false
	if t.rt != nil {
		t.rt.Stop()
		return nil
	}
	return t.f.Close()
}

// arm sets the timer to fire after d, or disarms it (0).
func (t *Timer) arm(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return // its number may be another file's by now
	}
	t.armed = d > 0
	if t.rt != nil {
		t.rt.Stop()
		if d > 0 {
			t.rt.Reset(d)
		}
		return
	}
	t.spec.Value = unix.NsecToTimespec(int64(d))
	t.spec.Interval = unix.Timespec{}
	if d > 0 {
		t.spec.Interval = unix.NsecToTimespec(int64(t.period))
	}
	// A timerfd_settime on a valid descriptor does not block: a raw call.
	unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0)
}

// run reads the expirations until Close, one tick each.
func (t *Timer) run() {
	for t.rc.Read(t.read) == nil {
		t.tick()
	}
}

// read1 reads the expiration count; false while there is none (EAGAIN:
// wait in the poller).
func (t *Timer) read1(fd uintptr) bool {
	_, _, ready := call(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&t.buf[0])), uintptr(len(t.buf)))
	return ready
}

func (t *Timer) tick() {
	select {
	case t.c <- struct{}{}:
	default:
	}
	if t.rt != nil && t.period > 0 {
		t.mu.Lock()
		if t.armed {
			t.rt.Reset(t.period)
		}
		t.mu.Unlock()
	}
}
