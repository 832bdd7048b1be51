package l2

import (
	"testing"
	"time"
)

// TestLifetimeLapsesBeforeTheBackupsTakeOver: a VIP last renewed just
// before its holder died is gone (lifetime and the kernel's lateness)
// before the backups stop waiting for that holder, and a VIP renewed a
// whole renewal period before is still there for a restart 1.5 s later
// (the kubelet's) when the backups wait RESTART_WAIT's default.
func TestLifetimeLapsesBeforeTheBackupsTakeOver(t *testing.T) {
	for _, tt := range []struct {
		interval, restartWait time.Duration
		check                 bool
		valid                 time.Duration
	}{
		{200 * time.Millisecond, 4 * time.Second, true, 3 * time.Second},
		{time.Second, 4 * time.Second, true, 3 * time.Second},
		{time.Second, 0, false, 3 * time.Second},
		{200 * time.Millisecond, 1500 * time.Millisecond, true, time.Second},
		{200 * time.Millisecond, 4 * time.Second, false, time.Second},
		{100 * time.Millisecond, 0, true, time.Second},
	} {
		l := Lifetime(tt.interval, tt.restartWait, tt.check)
		if l.Valid != tt.valid || l.Renew != l.Valid/6 {
			t.Errorf("%v %v %v: %+v, want %v renewed a sixth of it", tt.interval, tt.restartWait, tt.check, l, tt.valid)
		}
		wait := 4 * tt.interval
		if tt.check && tt.restartWait > wait {
			wait = tt.restartWait
		}
		// Where the backups wait longer than a second, the VIP is gone
		// before they stop waiting; where they wait less, it outlives the
		// wait by the difference (stated in docs/vrrp.md).
		if gone := l.Valid + KernelLate; wait > time.Second && gone > wait {
			t.Errorf("%v %v: the VIP may outlive the backups' wait %v by %v", tt.interval, tt.restartWait, wait, gone-wait)
		}
		if wait <= time.Second && l.Valid != time.Second {
			t.Errorf("%v %v: the backups wait %v: want the shortest lifetime, 1 s", tt.interval, tt.restartWait, wait)
		}
		if tt.check && tt.restartWait == 4*time.Second && l.Valid-l.Renew < 2500*time.Millisecond {
			t.Errorf("a restart (the kubelet's: a relist, then the container's start) may find the VIP gone: it lapses %v after the last renewal", l.Valid-l.Renew)
		}
	}
}
