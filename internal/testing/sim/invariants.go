package sim

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/novaedge/cpvip/internal/acd"
	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/l2"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// bounds are the invariants' time limits for a run's shape; each is stated
// from the mechanism it bounds.
type bounds struct {
	// twoHolders: the longest two running nodes may both hold the VIP on a
	// whole segment: a contention is settled by the first advertisement
	// each hears from the other (within an interval), a make-before-break
	// handover by the new master's first advertisement and the 100 ms grace.
	twoHolders time.Duration
	// twoResuming: the same when every holder restarted and found the
	// VIP bound (each resuming): none advertises before it has listened
	// for a whole ResumeListen, then the other hears the first and lets go.
	twoResuming time.Duration
	// stranger: the longest a node may hold the VIP while another host
	// answers for it: its conflict check settles (1.5 intervals), probes
	// within a second, waits 150 ms for answers.
	stranger time.Duration
	// quiet: after the last fault ends, the time within which exactly one
	// healthy node holds every VIP: health detection (3 checks and a
	// timeout), a node healthy again settling (one more check,
	// health.SettleRun) before it takes the VIP from a fail-open holder,
	// two master-down intervals, the check's settle and a probe.
	quiet time.Duration
	// candidate: the longest a healthy node with carrier may stay out of
	// the election: the instance's interface check runs every second; a
	// restarted node that found the VIP bound listens for another master
	// first (vrrp.ResumeListen).
	candidate time.Duration
	// settled: how long after a fault the group is settled again when
	// nothing else happened: two master-down intervals and a probe.
	settled time.Duration
	// flapGap: the longest a carrier flap of the holder too short for any
	// backup to take over may leave the VIP on no node, after the flap:
	// netlink's news, a probe and its answer wait (RFC 5227: a link that
	// changed is probed again), the reconcile step.
	flapGap time.Duration
}

func newBounds(sh shape) bounds {
	i, d := sh.Interval, sh.Delay
	masterDown := 4 * i
	return bounds{
		twoHolders:  i + 150*time.Millisecond + 4*d,
		twoResuming: vrrp.ResumeListen(i) + 150*time.Millisecond + 4*d,
		stranger:    i*3/2 + acd.ProbeEvery + acd.AnswerWait + 4*d + 100*time.Millisecond,
		quiet:       2*masterDown + 3*time.Second + 3*time.Second + time.Second + i*3/2 + 2*acd.ProbeEvery + 2*time.Second,
		candidate:   max(vrrp.RefreshEvery, vrrp.ResumeListen(i)) + 100*time.Millisecond,
		settled:     2*masterDown + acd.ProbeEvery + time.Second,
		flapGap:     netlinkDelay + acd.AnswerWait + 20*time.Millisecond + 2*d,
	}
}

// state is what the invariants remember between events.
type state struct {
	twoSince         time.Time // since when two running nodes hold the VIP
	twoResuming      bool      // every one of them was resuming then (bounds.twoResuming)
	strangerSince    time.Time // since when the stranger answers for the VIPs
	expects          []expectation
	expected         int    // expectations registered
	announcedUnbound string // set when one of our nodes starts announcing a VIP it has not bound
	unsettledTaker   string // set when one of our nodes takes the VIP from a live master while not settled
	deadTaker        string // set when one of our nodes takes the VIP from an advertising master after seeing its apiserver die
	resumedBeside    string // set when a restarted node resumes as master while another master serves
}

func newState() state { return state{} }

// expectation is something that must hold at every event in [from, to]:
// what a fault alone in its window promises.
type expectation struct {
	name     string
	from, to time.Time
	ok       func() bool
}

// check runs every invariant; the first that fails is returned.
func (s *sim) check() error {
	for _, c := range []func() *Failure{s.neverTwoHolders, s.noVIPOutlivesItsDaemon, s.neverAStrangersAddress, s.announcesOnlyWhatItHolds,
		s.exactlyOneHealthyHolder, s.healthyNodesAreCandidates, s.healthyNeverLooksFailOpen, s.takersSettled, s.takersAlive, s.resumesAlone, s.expectations} {
		if f := c(); f != nil {
			f.At = s.w.now.Sub(epoch)
			return f
		}
	}
	return nil
}

func (s *sim) neverTwoHolders() *Failure {
	hs := s.holders(vip4.Addr(), true)
	if len(hs) < 2 {
		s.inv.twoSince = time.Time{}
		return nil
	}
	if s.inv.twoSince.IsZero() {
		s.inv.twoSince = s.w.now
		s.inv.twoResuming = !slices.ContainsFunc(hs, func(h *host) bool { return h.role != ours || h.d.core.Phase() != vrrp.Resuming })
	}
	from, bound := later(s.inv.twoSince, s.seg.faultAt), s.bounds.twoHolders
	if s.inv.twoResuming {
		bound = max(bound, s.bounds.twoResuming)
	}
	if d := s.w.now.Sub(from); d > bound {
		return &Failure{"never two holders", 0, fmt.Sprintf("%s hold %s at once for %v on a whole segment (bound %v)",
			names(hs), vip4, d, bound)}
	}
	return nil
}

// noVIPOutlivesItsDaemon: a host whose daemon was killed, or has not run
// (frozen), for longer than the backups wait for a silent master whose host
// answers for the VIP (RESTART_WAIT with the conflict check, else four
// intervals; a second where that is shorter) and the kernel's lateness
// answers for no VIP: the backups may have taken over.
func (s *sim) noVIPOutlivesItsDaemon() *Failure {
	for _, h := range s.group {
		if h.role != ours || !h.bound(vip4.Addr()) {
			continue
		}
		since, what := h.goneAt, "killed"
		if h.d != nil {
			since, what = time.Time{}, ""
			if h.d.frozen() {
				since, what = h.d.frozenSince, "frozen"
			}
		}
		wait := 4 * h.cfg.AdvertInterval
		if h.cfg.ConflictCheck && h.cfg.RestartWait > wait {
			wait = h.cfg.RestartWait
		}
		if d := s.w.now.Sub(since); !since.IsZero() && d > max(wait, time.Second)+l2.KernelLate {
			return &Failure{"no VIP outlives its daemon", 0, fmt.Sprintf("%s still has %s bound %v after its daemon was %s (the backups wait %v)",
				h.name, vip4, d, what, wait)}
		}
	}
	return nil
}

func (s *sim) neverAStrangersAddress() *Failure {
	since := s.inv.strangerSince
	if since.IsZero() || !s.stranger.holds(vip4.Addr()) {
		return nil
	}
	for _, h := range s.holders(vip4.Addr(), true) {
		d := h.d
		if d.guard == nil {
			continue
		}
		from := later(since, later(later(d.started, d.thawed), later(d.wireDown, s.seg.faultAt)))
		if late := s.w.now.Sub(from); late > s.bounds.stranger {
			return &Failure{"a stranger's address is never bound", 0,
				fmt.Sprintf("%s holds %s while another host has answered for it for %v (bound %v)", h.name, vip4, late, s.bounds.stranger)}
		}
	}
	return nil
}

// announcesOnlyWhatItHolds: a node announces (gratuitous ARP, unsolicited
// NA) only a VIP it has bound: an announcement of one the conflict check
// keeps down claims an address on the wire before its probe cleared it.
// Always, no bound.
func (s *sim) announcesOnlyWhatItHolds() *Failure {
	if s.inv.announcedUnbound == "" {
		return nil
	}
	return &Failure{"a node announces only a VIP it holds", 0, s.inv.announcedUnbound}
}

// takersSettled: a node takes the VIP from a live master (one failing its
// checks, or with Preempt a weaker one) only while its own health has
// settled (health.SettleRun); a failure every node shares flickers, and
// the node whose check passed last is no better a holder. Always, no bound.
func (s *sim) takersSettled() *Failure {
	if s.inv.unsettledTaker == "" {
		return nil
	}
	return &Failure{"a node takes the VIP from a live master only once settled", 0, s.inv.unsettledTaker}
}

// takersAlive: a node takes the VIP from a master it heard advertise or
// resign within an interval (and 50 ms) never after its checker has seen
// its own apiserver, not healthy, close the kept connection (until a check
// passes again): a failure every node shares, noticed by the holder first,
// must not move the VIP to a node that knew of its own. Always, no bound;
// save from a master that resigned with fail open off (daemon.releasing).
func (s *sim) takersAlive() *Failure {
	if s.inv.deadTaker == "" {
		return nil
	}
	return &Failure{"a node that saw its apiserver die takes the VIP from no advertising master", 0, s.inv.deadTaker}
}

// resumesAlone: a restarted daemon that found the VIP bound resumes as
// master only when no other master has advertised for an interval: it never
// takes the VIP from a node that took over while it was down. Always, no
// bound.
func (s *sim) resumesAlone() *Failure {
	if s.inv.resumedBeside == "" {
		return nil
	}
	return &Failure{"a restarted node never takes the VIP from a live master", 0, s.inv.resumedBeside}
}

// eligible says whether h should be able to hold the VIP: its daemon runs,
// it has carrier, its apiserver is judged healthy.
func eligible(h *host) bool {
	return h.d != nil && h.linked() && (h.role == keepalived || h.d.state == health.Healthy)
}

func (s *sim) exactlyOneHealthyHolder() *Failure {
	if s.w.now.Sub(s.faultEnd) < s.bounds.quiet || s.stranger.holds(vip4.Addr()) {
		return nil
	}
	var ok []*host
	for _, h := range s.group {
		if eligible(h) {
			ok = append(ok, h)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	for _, v := range s.vips {
		hs := s.holders(v.Addr(), false)
		if len(hs) != 1 || !eligible(hs[0]) || (v != vip4 && hs[0] != s.holders(vip4.Addr(), false)[0]) {
			return &Failure{"exactly one healthy node holds every VIP", 0,
				fmt.Sprintf("%v after the last fault: %s held by %s; healthy with carrier: %s (bound %v)",
					s.w.now.Sub(s.faultEnd), v, names(hs), names(ok), s.bounds.quiet)}
		}
	}
	return nil
}

func (s *sim) healthyNodesAreCandidates() *Failure {
	for _, h := range s.group {
		d := h.d
		// Counted from its thaw too: a frozen daemon sees no carrier come
		// back (seed 3335: the interface made again during a freeze).
		if h.role != ours || !eligible(h) || d.frozen() ||
			s.w.now.Sub(later(later(d.started, d.thawed), later(d.healthySince, h.linkedSince))) < s.bounds.candidate {
			continue
		}
		if st := d.core.State(); st != vrrp.Backup && st != vrrp.Master {
			return &Failure{"no healthy node with carrier stays out of the election", 0,
				fmt.Sprintf("%s is healthy with carrier and in state %s (bound %v)", h.name, st, s.bounds.candidate)}
		}
	}
	return nil
}

func (s *sim) healthyNeverLooksFailOpen() *Failure {
	for _, h := range s.group {
		if d := h.d; d != nil && d.state == health.Healthy && d.cfg.FailOpen && d.core.Priority() == vrrp.FailOpenPriority {
			return &Failure{"a healthy node never takes part with the fail-open priority", 0,
				fmt.Sprintf("%s is healthy at priority %d with fail open on", h.name, d.core.Priority())}
		}
	}
	return nil
}

func (s *sim) expectations() *Failure {
	keep := s.inv.expects[:0]
	var fail *Failure
	for _, e := range s.inv.expects {
		switch {
		case s.w.now.After(e.to):
			continue
		case !s.w.now.Before(e.from) && !e.ok() && fail == nil:
			fail = &Failure{e.name, 0, "holders: " + names(s.holders(vip4.Addr(), false))}
		}
		keep = append(keep, e)
	}
	s.inv.expects = keep
	return fail
}

// expect registers what a fault promises when nothing else happens around
// it: a carrier flap of the holder too short for a backup to take over
// costs the flap; the holder's daemon killed and restarted within an
// interval, its apiserver healthy, leaves the VIP where it is.
func (s *sim) expect(f fault, t *host) {
	i := s.sh.Interval
	holds := func() bool { return len(s.holders(vip4.Addr(), false)) > 0 }
	if f.What == fFreeze && !t.holds(vip4.Addr()) {
		s.expectFrozenBackup(f, t)
		return
	}
	if !t.holds(vip4.Addr()) || t.role != ours || t.d == nil || t.api != apiHealthy || t.d.state != health.Healthy {
		return
	}
	start := s.w.now
	n := len(s.inv.expects)
	// kept: how long the daemon may not run with its VIP still bound: the
	// lifetime, less the renewal period (renewed up to that long before),
	// the kernel's earliness, and the restarted daemon's first check and
	// interval of listening.
	life := l2.Lifetime(t.cfg.AdvertInterval, t.cfg.RestartWait, t.cfg.ConflictCheck)
	kept := life.Valid - life.Renew - 50*time.Millisecond
	defer func() { s.inv.expected += len(s.inv.expects) - n }()
	switch {
	case f.What == fFlap && f.Dur < 3*i-2*i/time.Duration(max(1, t.cfg.AdvertsPerInterval))-50*time.Millisecond && s.alone(f, f.Dur+3*i):
		// Back before a backup that missed our last advertisement can fire
		// (vrrp.Machine.Fault), wherever the flap began between two.
		end := start.Add(f.Dur)
		s.inv.expects = append(s.inv.expects, expectation{"a carrier flap costs the flap, not a master-down interval",
			end.Add(s.bounds.flapGap), end.Add(3 * i), holds})
	case f.What == fWire && f.Arg == 1 && s.alone(f, f.Dur+3*i):
		s.inv.expects = append(s.inv.expects, expectation{"a fault in the check never keeps the VIP down",
			start.Add(acd.UncheckedAfter + s.bounds.settled), start.Add(f.Dur), holds})
	case harmless(f) && s.alone(f, f.Dur+3*i):
		stays := func() bool { return t.holds(vip4.Addr()) }
		s.inv.expects = append(s.inv.expects, expectation{"a fault that takes nothing from the holder moves nothing (" + f.What.String() + ")",
			start, start.Add(f.Dur + 3*i), stays})
	case f.What == fFreeze && f.Dur < min(kept, max(2*i, s.backupsWait(t)-2*i)-10*time.Millisecond) && s.alone(f, f.Dur+3*i):
		stays := func() bool { return t.holds(vip4.Addr()) }
		s.inv.expects = append(s.inv.expects, expectation{"a freeze shorter than the backups wait moves nothing",
			start, start.Add(f.Dur + 3*i), stays})
	case f.What == fFreeze && f.Dur > s.backupsWait(t)+i+s.sh.Delay && !t.d.cfg.Preempt && s.takerBeside(t) && s.alone(f, f.Dur+3*i):
		// A backup took over: the node steps back when it runs again, at
		// once, and does not take the VIP back (no ping-pong), nor make the
		// taker step back too (no master until a Master_Down_Timer fired;
		// the taker may keep the VIP down a moment while the conflict check
		// still hears the frozen node's kernel).
		thaw := start.Add(f.Dur)
		gone := func() bool {
			return !t.holds(vip4.Addr()) && slices.ContainsFunc(s.group, func(h *host) bool { return h != t && h.d != nil && h.d.inst.Leading() })
		}
		s.inv.expects = append(s.inv.expects, expectation{"a holder frozen past the backups' wait steps back when it runs again",
			thaw.Add(time.Millisecond), thaw.Add(3 * i), gone})
	case f.What == fKill && f.Dur > i && f.Dur < min(kept-i-50*time.Millisecond, s.backupsWait(t)-3*i-200*time.Millisecond) &&
		(s.alone(f, f.Dur+3*i) || s.besideRestart(f, t, f.Dur+3*i)) && reflect.DeepEqual(*t.cfg, *t.d.cfg):
		// Past the master-down interval, within RESTART_WAIT (less the
		// intervals of the last advertisement and the asking, and the
		// restarted daemon's first check): the backups wait for it, its
		// host answering for the VIP, and it resumes. Not when it restarts
		// with another configuration than it ran (a reload the daemon could
		// not apply live: seed 1855, priority 1 from the file, preempted).
		alone := func() bool { hs := s.holders(vip4.Addr(), false); return len(hs) == 1 && hs[0] == t }
		s.inv.expects = append(s.inv.expects, expectation{"a killed daemon restarted within the backups' wait keeps the VIP",
			start, start.Add(f.Dur + 3*i), alone})
	case f.What == fKill && f.Dur <= i && s.alone(f, f.Dur+3*i) && reflect.DeepEqual(*t.cfg, *t.d.cfg):
		// Not when it restarts with another configuration than it ran, as
		// above (a file's priority 1 with fail open off, which the healthy
		// backups take for a failing master's).
		s.inv.expects = append(s.inv.expects, expectation{"a killed daemon whose apiserver stayed healthy leaves no gap",
			start, start.Add(f.Dur + 3*i), holds})
	case f.What == fAllAPIs && !s.sh.Keepalived && s.alone(f, f.Dur+3*i) && !slices.ContainsFunc(s.group, func(h *host) bool { return h.d == nil || !h.d.cfg.FailOpen }):
		// Fail open as every daemon runs it (a reload may have turned it off).
		s.expectShared(f)
	}
}

// expectShared: every apiserver killed (fail open, no member without a
// health check): some node holds the VIP throughout; and once every node
// knows — the last kill, its teardown, a check interval for a node whose
// kept connection the kill did not close, a handover's grace and two
// intervals for a resigned holder's fallback and a tie — one node holds
// the VIP, and it stays put.
func (s *sim) expectShared(f fault) {
	i, start := s.sh.Interval, s.w.now
	end := start.Add(f.Dur)
	all := time.Duration((len(s.group)-1)*f.Arg) * time.Millisecond
	const grace, slack = 100 * time.Millisecond, 100 * time.Millisecond // a handover's grace; the segment and the loop
	known := start.Add(all + killTeardown + s.group[0].cfg.HealthInterval + grace + 2*i + slack)
	var keeper *host
	put := func() bool {
		hs := s.holders(vip4.Addr(), false)
		if keeper == nil && len(hs) == 1 {
			keeper = hs[0]
		}
		return len(hs) == 1 && hs[0] == keeper
	}
	held := func() bool { return len(s.holders(vip4.Addr(), false)) > 0 }
	s.inv.expects = append(s.inv.expects, expectation{"a failure every node shares never leaves the VIP unheld", start, end, held})
	if known.Before(end) {
		s.inv.expects = append(s.inv.expects, expectation{"a failure every node shares moves the VIP no more once every node knows", known, end, put})
	}
}

// expectFrozenBackup: a frozen backup, alone in its window, takes nothing
// from a healthy holder, whatever the length: when it runs again it reads
// the advertisements queued meanwhile before its timer acts.
func (s *sim) expectFrozenBackup(f fault, t *host) {
	hs := s.holders(vip4.Addr(), true)
	if t.d == nil || len(hs) != 1 || !eligible(hs[0]) || hs[0].api != apiHealthy || !s.alone(f, f.Dur+3*s.sh.Interval) {
		return
	}
	h, start := hs[0], s.w.now
	s.inv.expects = append(s.inv.expects, expectation{"a frozen backup takes nothing from a healthy holder",
		start, start.Add(f.Dur + 3*s.sh.Interval), func() bool { return h.holds(vip4.Addr()) && !t.holds(vip4.Addr()) }})
	s.inv.expected++
}

// backupsWait is how long after t's last advertisement the first backup
// takes over while t's host still answers for the VIP (its daemon frozen
// or killed): RESTART_WAIT for ours that ask (a conflict check, a wait
// longer than the master down interval), 4 intervals (the master down
// interval and a margin) for a node that does not.
func (s *sim) backupsWait(t *host) time.Duration {
	i := s.sh.Interval
	wait := time.Duration(0)
	for _, h := range s.group {
		if h == t || h.d == nil {
			continue
		}
		w := 4 * i
		if h.role == ours && h.d.guard != nil && h.cfg.RestartWait > 4*i {
			w = h.cfg.RestartWait
		}
		if wait == 0 || w < wait {
			wait = w
		}
	}
	return wait
}

// takerBeside says whether a node other than t will take over from it: a
// healthy candidate of ours above the fail-open priority, or the
// keepalived-like member, with carrier.
func (s *sim) takerBeside(t *host) bool {
	for _, h := range s.group {
		if h == t || h.d == nil || !h.linked() || h.d.core.State() != vrrp.Backup {
			continue
		}
		if h.role == keepalived || h.d.state == health.Healthy && h.d.core.Priority() > vrrp.FailOpenPriority {
			return true
		}
	}
	return false
}

// harmless says whether f takes nothing from a holder's ability to serve:
// frames that do not parse, its neighbour table flushed, its netlink
// subscription failing, a reload of its own that changes no priority, a
// failing conflict-check wire (a fault in the check never moves the VIP).
func harmless(f fault) bool {
	switch f.What {
	case fMalformed, fNeighFlush, fNetlink:
		return true
	case fWire:
		return f.Arg == 0
	case fReload:
		return f.Arg == 1 || f.Arg == 3 // preempt toggled on the holder, a file that does not parse
	}
	return false
}

// alone says whether f comes to a settled group and nothing else happens
// within after it: the faults before it ended two master-down intervals
// and a probe ago (settled), no other starts or lasts into the window.
func (s *sim) alone(f fault, after time.Duration) bool {
	if s.w.now.Sub(s.faultEnd) < s.bounds.settled {
		return false
	}
	for _, g := range s.sh.Faults {
		if g != f && g.At <= f.At+after && g.end() >= f.At-s.bounds.settled {
			return false
		}
	}
	return true
}

// besideRestart is alone for a kill of t's daemon whose only neighbours
// in its window are other nodes' daemons stopped (or killed while they did
// not hold the VIP: a killed holder resumes with it) and running again by
// then, which would not take the VIP from t by preempting: a
// backup whose daemon started a moment before the master's was killed
// never heard that master advertise, and must wait for it all the same
// (the kubeadm e2e: its pod back 0.3 s before the master's SIGKILL).
func (s *sim) besideRestart(f fault, t *host, after time.Duration) bool {
	if s.faultEnd.After(s.w.now) {
		return false
	}
	for _, g := range s.sh.Faults {
		if g == f || g.At > f.At+after || g.end() < f.At-s.bounds.settled {
			continue
		}
		hg := s.hit[g]
		h := hg.h
		if g.What != fStop && (g.What != fKill || hg.held) || h == nil || h == t || h.role != ours || h.d == nil ||
			g.end() > f.At || h.cfg.Preempt && h.cfg.Priority > t.cfg.Priority || !s.aloneBut(g, f, f.At+after) {
			return false
		}
	}
	return true
}

// aloneBut says whether no fault other than g and f comes between the
// settling time before g and until.
func (s *sim) aloneBut(g, f fault, until time.Duration) bool {
	for _, o := range s.sh.Faults {
		if o != g && o != f && o.At <= until && o.end() >= g.At-s.bounds.settled {
			return false
		}
	}
	return true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func names(hs []*host) string {
	if len(hs) == 0 {
		return "nobody"
	}
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(h.name)
	}
	return b.String()
}
