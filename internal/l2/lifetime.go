package l2

import (
	"time"

	"github.com/novaedge/cpvip/internal/reconcile"
)

// KernelLate is how long after its lifetime ends the kernel typically still
// has an address: measured on Linux 6.18, 4-165 ms after a renewal, IPv4 and
// IPv6 alike. Not a bound: the kernel's lifetime worker rounds its next run
// up to a whole second and runs at most once a second, so on a host whose
// addresses change often it may be up to about a second late.
const KernelLate = 200 * time.Millisecond

// Lifetime is the lifetime of the VIP an L2 holder binds, the kernel's dead
// man's switch: unless the holder renews it, it lapses before a backup takes
// over from a master whose host still answers for the VIP (RESTART_WAIT
// with the conflict check, else the master down interval, at most four
// intervals), so a daemon killed or frozen for longer never leaves two
// hosts answering for the VIP; and it is as long as that allows, so a
// quick restart still finds the VIP bound and resumes. Whole seconds (the
// kernel's unit): the wait less half a second, rounded down, at least a
// second. Renewed six times a lifetime (every 500 ms at the defaults): a
// daemon killed just before a renewal leaves the VIP bound for 2.5 s at
// least, time for systemd's or the kubelet's restart to find it and
// resume; a late renewal (a starved process) loses nothing. Each renewal
// is one RTM_NEWADDR for every netlink listener on the host.
func Lifetime(interval, restartWait time.Duration, conflictCheck bool) reconcile.Lifetime {
	wait := 4 * interval
	if BackupsWait(interval, restartWait, conflictCheck) {
		wait = restartWait
	}
	valid := max(time.Second, (wait - 500*time.Millisecond).Truncate(time.Second))
	return reconcile.Lifetime{Valid: valid, Renew: valid / 6}
}

// BackupsWait says whether the backups wait RESTART_WAIT for a master that
// went silent while its host still answers for the VIP (the conflict check
// asks, and the wait is longer than the master down interval): only then
// does a restart of ours that leaves the VIP bound keep it, rather than
// meet a backup's takeover.
func BackupsWait(interval, restartWait time.Duration, conflictCheck bool) bool {
	return conflictCheck && restartWait > 4*interval
}
