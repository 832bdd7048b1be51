package sim

import "time"

// A frozen daemon (SIGSTOP, a VM paused or migrated, a starved host) runs
// nothing: its timers, the frames its sockets receive and the kernel's
// news wait. Its kernel goes on (the VIPs stay bound and answer). When it
// runs again, what waited runs in the order it came; the VRRP instance's
// Node hands the core the advertisements that wait before a timer acts
// (vrrp.Node.Due, CatchUp, Lapsed, with read as its Reader), and an
// announcement that waits for the election to catch up (a late repeat, a
// contest) finds them read.

// waited is what reached a frozen daemon: an advertisement for the
// election (advert), or anything else; done once it ran.
type waited struct {
	advert bool
	do     func()
	done   bool
}

// frozen says whether d's process does not run now.
func (d *daemon) frozen() bool { return d.h.s.w.now.Before(d.frozenUntil) }

// when runs do now, or, while d is frozen, when it runs again; advert says
// do hands the election an advertisement its socket received. Whatever do
// signalled reaches the node as the feed hands it over (news).
func (d *daemon) when(advert bool, do func()) {
	if !d.frozen() {
		do()
		d.news()
		return
	}
	d.waiting = append(d.waiting, &waited{advert: advert, do: do})
}

// read is the instance's vrrp.Reader: the advertisements that wait reach
// the election now, in the order they came.
func (d *daemon) read() time.Time {
	for _, w := range d.waiting {
		if w.advert && !w.done && d.alive() {
			w.done = true
			w.do()
		}
	}
	return d.h.s.w.now
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

// thaw runs d again: what waited runs in the order it came (a read may
// have run advertisements ahead).
func (d *daemon) thaw() {
	d.frozenUntil, d.thawed = time.Time{}, d.h.s.w.now
	for i := 0; i < len(d.waiting) && d.alive(); i++ {
		if w := d.waiting[i]; !w.done {
			w.done = true
			w.do()
			d.news()
		}
	}
	d.waiting = nil
}
