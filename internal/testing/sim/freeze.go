package sim

import "time"

// A frozen daemon (SIGSTOP, a VM paused or migrated, a starved host) runs
// nothing: its timers, the packets its sockets receive and the kernel's
// news wait. Its kernel goes on (the VIPs stay bound and answer). When it
// runs again the VRRP instance hands the core the advertisements queued
// meanwhile before any timer acts (vrrp.Instance.drain): packets first,
// then everything else in the order it came.

// frozen says whether d's process does not run now.
func (d *daemon) frozen() bool { return d.h.s.w.now.Before(d.frozenUntil) }

// when runs do now, or, while d is frozen, when it runs again; packet says
// do is a packet a socket received.
func (d *daemon) when(packet bool, do func()) {
	switch {
	case !d.frozen():
		do()
	case packet:
		d.queued = append(d.queued, do)
	default:
		d.held = append(d.held, do)
	}
}

// freeze stops d's process for dt (SIGSTOP, then SIGCONT).
func (d *daemon) freeze(dt time.Duration) {
	w := d.h.s.w
	if !d.frozen() {
		d.frozenSince = w.now
	}
	if end := w.now.Add(dt); end.After(d.frozenUntil) {
		d.frozenUntil = end
	}
	until := d.frozenUntil
	w.at(until, d.h.name+" thawed", func() {
		if d.frozenUntil.Equal(until) {
			d.thaw()
		}
	})
}

// thaw runs d again: what waited runs, packets first.
func (d *daemon) thaw() {
	d.frozenUntil, d.thawed = time.Time{}, d.h.s.w.now
	queued, held := d.queued, d.held
	d.queued, d.held = nil, nil
	for _, do := range append(queued, held...) {
		if !d.alive() {
			return
		}
		do()
		d.settle()
	}
}
