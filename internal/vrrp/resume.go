package vrrp

import (
	"net/netip"
	"time"
)

// resumer holds the VIPs found bound at start (Config.Resume) until the
// first health verdict: healthy resumes as master (resumeAs); unhealthy,
// another master heard, or no verdict within resumeWait releases them
// (endResume). Run's goroutine only.
type resumer struct {
	pending bool
	timer   *time.Timer // fires at resumeWait; stopped when not pending
}

// resumeWait is how long VIPs found bound at start wait for the first
// health verdict: a master down interval, after which a backup would have
// taken over.
func (i *Instance) resumeWait() time.Duration { return 3 * i.cfg.Interval }

// startResume begins the run: with Config.Resume the VIPs stay and wait
// for a verdict; without, they must not be here (not master yet).
func (i *Instance) startResume(decide func(netip.Prefix, bool)) *resumer {
	r := &resumer{pending: i.cfg.Resume, timer: time.NewTimer(i.resumeWait())}
	if r.pending {
		i.log.Info("VIP found bound at start (an earlier run was killed): keeping it until the first health check decides", "at_most", i.resumeWait())
	} else {
		r.timer.Stop()
		i.decideAll(decide, false)
	}
	return r
}

// done ends the wait and reports whether it was pending.
func (r *resumer) done() bool {
	was := r.pending
	r.pending = false
	r.timer.Stop()
	return was
}

// endResume releases the VIPs found at start if they still wait, saying why.
func (i *Instance) endResume(r *resumer, decide func(netip.Prefix, bool), why string) {
	if r.done() {
		i.log.Info("Not resuming: releasing the VIP found bound at start", "reason", why)
		i.decideAll(decide, false)
	}
}

// resumeAs joins the election with priority p as master at once: the
// apiserver is healthy and the VIPs are already here (Machine.Resume).
func (i *Instance) resumeAs(p uint8) []Action {
	i.setStatus(func(s *Status) { s.Priority = p })
	i.m.SetPriority(p, time.Now()) // in Initialize: no action
	return i.m.Resume(time.Now())
}
