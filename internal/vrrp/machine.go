package vrrp

import (
	"fmt"
	"net/netip"
	"time"
)

// State is a VRRP state of RFC 5798 section 6.4.
type State int

// The states. Initialize also stands for "not a candidate": the local
// apiserver is unhealthy, so this node takes no part in the election.
const (
	Initialize State = iota
	Backup
	Master
	// Fault: the interface has no carrier (or is down); the node takes no
	// part in the election until it comes back, as keepalived's FAULT.
	Fault
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Backup:
		return "backup"
	case Master:
		return "master"
	case Fault:
		return "fault"
	default:
		return "initialize"
	}
}

// FailOpenPriority is the priority of a node whose apiserver is unhealthy
// but which stays in the election (fail open): it keeps the VIP while no
// node is healthy, and a healthy, settled backup (Params.Unsettled) takes
// the VIP from it within its skew time whatever Preempt says. Healthy nodes
// use 2-254.
const FailOpenPriority = 1

// Params are an instance's protocol parameters.
type Params struct {
	VRID     uint8
	Priority uint8         // 1-254
	Interval time.Duration // Advertisement_Interval
	// Sends is how many advertisements a master sends per Interval, evenly
	// spaced (0 or 1: RFC 5798's one). The backups still wait 3 Intervals
	// and the skew, now 3 x Sends advertisements: one lost in a row more
	// than that, not three, makes a false takeover.
	Sends   int
	Preempt bool
	// Unsettled: our apiserver is healthy but has not passed its latest
	// checks (health.SettleRun): we take the VIP from no live master (a
	// fail-open one, whose failure may be ours too, or with Preempt a
	// weaker one) and follow it instead; a silent one we still replace.
	Unsettled bool
	// SettleWithin bounds how long Unsettled holds a healthy backup back
	// from a master at the fail-open priority: once that master has
	// advertised it this long, its failure is no flicker every node
	// shares, and the backup takes over settled or not (0: no bound).
	SettleWithin time.Duration
	// InDoubt: our apiserver closed the kept connection and the check that
	// the close started or broke has not answered
	// (health.Transition.InDoubt): its process may be going away. Until
	// the answer we take the VIP from no master that still advertises,
	// resigned or alive, as a failing node does, and follow it; a silent
	// one we still replace. Our priority stays.
	InDoubt bool
	Primary netip.Addr // our primary address: the tie-breaker
	// ServedWait is how long a backup waits for a master that stopped
	// advertising while its host still answers for the VIPs, counted from
	// its last advertisement (Served); 0 or no longer than the master down
	// interval: not at all.
	ServedWait time.Duration
}

// Action is what the machine asks its driver to do. Send is set to send an
// advertisement with Priority; To is set on a state change, with Reason;
// Reannounce asks for fresh gratuitous ARP / NA for a VIP still held,
// because of the weaker master Other; Ask asks whether another router's
// host still answers for the VIPs (its answer: Served).
type Action struct {
	Ask        bool
	Send       bool
	Priority   uint8
	To         State
	Changed    bool
	Reason     string
	Reannounce bool
	Other      netip.Addr
}

// Machine is the VRRP state machine. It reads no clock: every event carries
// the time, and Deadline says when Timeout must be called next.
type Machine struct {
	p              Params
	state          State
	masterAdverInt time.Duration
	deadline       time.Time // Adver_Timer (Master) or Master_Down_Timer (Backup); zero = none
	master         netip.Addr
	masterPriority uint8 // priority of the last advertisement a backup heard from its master
	// failOpenSince: since when that master advertises the fail-open
	// priority while we keep our priority (zero: it does not): how long a
	// healthy backup has waited for its own settling (SettleWithin).
	failOpenSince time.Time
	candidate     bool  // SetCandidate's last word; state Fault ignores it until carrier returns
	took          Cause // why we last became master (NoTakeover: not by a takeover)

	// What a state remembers beyond the RFC's timers, meaningful in that
	// state only:
	//
	// Backup: how it stands in replacing its master (takeover.go).
	wait backupWait
	// Fault entered as master: the moment a backup's Master_Down_Timer can
	// first fire (3 x our interval after the last advertisement it heard,
	// which may be the one before our last). Carrier back before it, no
	// backup has taken over.
	masterUntil time.Time
	// Master: our last answer to a weaker master.
	lastAnswer time.Time
	// Master back from an absence (wasAbsent): the weaker master whose
	// advertisement the overdue timer answers (Timeout), once what the
	// kernel queued meanwhile is read.
	owed netip.Addr
}

// NewMachine returns a machine in Initialize.
func NewMachine(p Params) *Machine {
	return &Machine{p: p, masterAdverInt: p.Interval}
}

// SetPrimary changes our primary address (the interface was re-created).
func (m *Machine) SetPrimary(a netip.Addr) { m.p.Primary = a }

// SetPreempt changes Preempt (a reload): it counts from the next
// advertisement a backup hears.
func (m *Machine) SetPreempt(on bool) { m.p.Preempt = on }

// SetSettleWithin changes SettleWithin (a reload of the health interval):
// it counts at the next advertisement.
func (m *Machine) SetSettleWithin(d time.Duration) { m.p.SettleWithin = d }

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Master returns the address of the last master heard (or ourselves as master).
func (m *Machine) Master() netip.Addr { return m.master }

// Deadline returns when Timeout is due; the zero time means no timer runs.
func (m *Machine) Deadline() time.Time {
	if at := m.wait.askDue(); m.state == Backup && !at.IsZero() && at.Before(m.deadline) {
		return at
	}
	return m.deadline
}

// sendEvery is a master's time between two advertisements.
func (m *Machine) sendEvery() time.Duration { return m.p.Interval / time.Duration(max(1, m.p.Sends)) }

// MasterDownInterval is 3 x Master_Adver_Interval + Skew_Time (RFC 5798 section 6.1).
func (m *Machine) MasterDownInterval() time.Duration {
	return 3*m.masterAdverInt + m.skew()
}

// skew is ((256 - Priority) x Master_Adver_Interval) / 256.
func (m *Machine) skew() time.Duration {
	return time.Duration(256-int(m.p.Priority)) * m.masterAdverInt / 256
}

// Priority returns our current priority.
func (m *Machine) Priority() uint8 { return m.p.Priority }

// SetPriority changes our priority (1-254) while we are a candidate. A
// master advertises the new one at once; a backup that now outranks a
// fail-open master, or a weaker master with Preempt, takes over after its
// handover skew instead of waiting for the next advertisement.
func (m *Machine) SetPriority(p uint8, now time.Time) []Action {
	if p == m.p.Priority {
		return nil
	}
	m.p.Priority = p
	if !m.failOpenSince.IsZero() {
		m.failOpenSince = now // healthy just now: our wait for settling starts
	}
	if m.state == Master {
		m.deadline = now.Add(m.sendEvery())
		return []Action{{Send: true, Priority: p}}
	}
	m.reconsider(now)
	return nil
}

// SetUnsettled changes Unsettled: a backup that settles while it follows a
// fail-open master takes over after its handover skew.
func (m *Machine) SetUnsettled(u bool, now time.Time) {
	if u == m.p.Unsettled {
		return
	}
	m.p.Unsettled = u
	m.reconsider(now)
}

// SetInDoubt changes InDoubt.
func (m *Machine) SetInDoubt(d bool, now time.Time) {
	if d == m.p.InDoubt {
		return
	}
	m.p.InDoubt = d
	m.reconsider(now)
	if !d {
		m.wait.resigned = netip.Addr{} // taken over, or the doubt ended failing
	}
}

// reconsider looks again, as a backup, at whether we take the VIP from the
// master we follow, after our priority, Unsettled or InDoubt changed. Only
// a change of that answer touches the timer: settledness flickers with
// every failed check, and a restart of the Master_Down_Timer at each would
// put off for good the replacement of a master that went silent meanwhile.
func (m *Machine) reconsider(now time.Time) {
	if m.state != Backup {
		return
	}
	switch {
	case m.master.IsValid() && m.preempts(m.masterPriority, m.failingFor(m.master, m.masterPriority, now)):
		m.takeOverSoon(now, m.fromLive(now))
	case m.wait.resigned.IsValid() && !m.resignationAsSilence():
		from := m.wait.resigned
		m.wait.resigned = netip.Addr{}
		m.takeOverSoon(now, Takeover{Cause: Resigned, From: from})
	case m.wait.phase == soon && (m.wait.soon.Cause.Live() || m.resignationAsSilence()):
		// A takeover from the live master was due, and we turned
		// unhealthy, unsettled or in doubt before our skew ran out: follow
		// it again, its master down interval counted from its last
		// advertisement.
		// So for a resignation's takeover (priority 0) once we fail too,
		// as a failing backup does not bring it forward (Receive): a
		// failure every apiserver shares, seen by the holder first, must
		// not move the VIP to the node that noticed last; nor to one whose
		// apiserver closed its connection and is being checked (InDoubt):
		// the holder keeps the VIP meanwhile. A resignation's takeover
		// stands for a backup merely unsettled.
		// The resignation itself is a sign of life, counted as a failing
		// backup counts it (resignHeard).
		since, soon, first := m.wait.since, m.wait.soon, m.wait.resignedAt
		if since.IsZero() {
			since = now
		}
		m.waitFor(since)
		if soon.Cause == Resigned && !first.IsZero() {
			m.resignHeard(first)
		}
		if soon.Cause == Resigned && m.p.InDoubt {
			m.wait.resigned = soon.From
		}
	}
}

// preempts says whether we take the VIP from a live master advertising
// priority, at the fail-open priority for failingFor: only stronger and
// settled (or, from a master failing for SettleWithin, healthy); from a
// fail-open one whatever Preempt says, from any other only with Preempt.
func (m *Machine) preempts(priority uint8, failingFor time.Duration) bool {
	settled := !m.p.Unsettled || m.settleBound(priority, failingFor)
	return priority < m.p.Priority && settled && !m.p.InDoubt && (m.p.Preempt || priority == FailOpenPriority)
}

// resignHeard takes a priority 0 as a sign of life, for a backup that
// takes a resignation as a silence: the resigned master still holds the
// VIP and repeats it every interval, falling back to the fail-open
// priority after two (Core.fallbackWait) or letting the VIP go after five
// (Core.handoverWait). So the master down interval counts from an
// interval before each repeat, but never from later than the first:
// past the fallback however many advertisements were lost before it,
// and before the release.
func (m *Machine) resignHeard(now time.Time) {
	first := m.wait.resignedAt
	if first.IsZero() {
		first = now
	}
	since := now.Add(-m.masterAdverInt)
	if first.Before(since) {
		since = first
	}
	if since.After(m.wait.since) {
		m.waitFor(since)
	}
	m.wait.resignedAt = first
}

// resignationAsSilence says whether we take the VIP from a resigned master
// only as from a silent one: our apiserver fails (the fail-open priority),
// or we are in doubt of it (InDoubt).
func (m *Machine) resignationAsSilence() bool {
	return m.p.Priority == FailOpenPriority || m.p.InDoubt
}

// settleBound says whether a master at priority has failed too long for
// our settling to matter (SettleWithin).
func (m *Machine) settleBound(priority uint8, failingFor time.Duration) bool {
	return priority == FailOpenPriority && m.p.SettleWithin > 0 && failingFor >= m.p.SettleWithin
}

// failingFor returns how long src, advertising priority now, has
// advertised the fail-open priority as the master we follow, since our
// priority last changed; 0 for any other.
func (m *Machine) failingFor(src netip.Addr, priority uint8, now time.Time) time.Duration {
	if priority != FailOpenPriority || !m.followsFailing(src) {
		return 0
	}
	return now.Sub(m.failOpenSince)
}

// followsFailing says whether src is the master we follow and we count how
// long it has advertised the fail-open priority.
func (m *Machine) followsFailing(src netip.Addr) bool {
	return !m.failOpenSince.IsZero() && src == m.master && m.masterPriority == FailOpenPriority
}

// follow makes src, advertising priority at now, the master we follow.
func (m *Machine) follow(src netip.Addr, priority uint8, now time.Time) {
	switch {
	case priority != FailOpenPriority:
		m.failOpenSince = time.Time{}
	case !m.followsFailing(src):
		m.failOpenSince = now
	}
	m.master, m.masterPriority = src, priority
}

// Took returns why we last became master (NoTakeover: not by a takeover).
func (m *Machine) Took() Cause { return m.took }

// fromLive is the takeover at now of the live master we follow.
func (m *Machine) fromLive(now time.Time) Takeover {
	if m.masterPriority == FailOpenPriority && m.p.Unsettled {
		return Takeover{Cause: FailOpenLong, From: m.master, For: now.Sub(m.failOpenSince).Round(time.Millisecond)}
	}
	if m.masterPriority == FailOpenPriority {
		return Takeover{Cause: FailOpenMaster, From: m.master}
	}
	return Takeover{Cause: WeakerMaster, From: m.master, Priority: m.masterPriority}
}

// followsStronger says whether a backup follows a master other than src
// that advertises above the fail-open priority.
func (m *Machine) followsStronger(src netip.Addr) bool {
	return m.master.IsValid() && m.master != src && m.masterPriority > FailOpenPriority
}

// takeOverSoon brings the Master_Down_Timer forward to the handover skew:
// the master resigned or fell to the fail-open priority, so whether its
// host still answers does not matter.
func (m *Machine) takeOverSoon(now time.Time, t Takeover) {
	var first time.Time // a resignation's first stays a sign of life (reconsider)
	if t.Cause == Resigned {
		first = m.wait.resignedAt
	}
	switch at := now.Add(m.handoverSkew()); {
	case m.deadline.IsZero() || at.Before(m.deadline):
		m.deadline, m.wait = at, backupWait{phase: soon, since: m.wait.since, soon: t, resignedAt: first}
	case m.wait.phase != soon:
		m.wait = backupWait{phase: counting, since: m.wait.since, resignedAt: first} // no more asking
	case t.Cause.Live():
		m.wait.soon = t // due already: now for this reason (settled, or past SettleWithin)
	}
}

// waitFor (re)starts the Master_Down_Timer at now, the master's latest
// sign of life. With ServedWait, the backup asks half an interval before
// it fires whether the master's host still answers for the VIPs (Served).
func (m *Machine) waitFor(now time.Time) {
	m.deadline, m.wait = now.Add(m.MasterDownInterval()), backupWait{phase: counting, since: now}
	if m.p.ServedWait > m.MasterDownInterval() {
		m.wait.ask = m.deadline.Add(-m.askAhead())
	}
}

// askAhead is how long before the Master_Down_Timer fires the backup asks,
// and how long an answer puts it off: half the master's interval.
func (m *Machine) askAhead() time.Duration { return m.masterAdverInt / 2 }

// Served says that a host other than this node answered for a VIP at now,
// and whether it is a known router of our group: its kernel runs and holds
// the VIP. A stranger's answer counts only while the backup has heard no
// master at all: its daemon started after the master went silent, so it
// cannot tell the master's host from a stranger
// (testdata/core/restarted-backup-stranger.txt); a backup that heard its master
// knows it, and a stranger on a VIP (a conflict on one family of a dual
// stack) must not slow its takeover of the others. A backup that asked
// (its master silent for nearly the master down interval) puts its
// Master_Down_Timer off by two askAheads, asking again after one, for as
// long as the answers come and up to ServedWait after the master's last
// advertisement: the master's host serves, only its VRRP daemon is silent —
// killed and started again by the kubelet or systemd, it resumes as master
// (Resume), and a takeover meanwhile would move the VIP twice. A host that
// stops answering (cut off, powered off) is taken over from as without the
// wait. It returns until when the wait lasts at most, and whether this
// answer began it (zero: it changed nothing).
func (m *Machine) Served(member bool, now time.Time) (until time.Time, began bool) {
	asked := m.wait.askedAt()
	if m.state != Backup || asked.IsZero() || now.Before(asked) || !member && m.master.IsValid() {
		return time.Time{}, false
	}
	began = !m.wait.answered()
	m.wait.phase, m.wait.ask = counting, time.Time{} // the question is answered
	if !began {
		m.wait.phase = held
	}
	until = m.wait.since.Add(m.p.ServedWait)
	next := now.Add(2 * m.askAhead())
	if next.After(until) {
		next = until
	}
	if !next.After(m.deadline) {
		return time.Time{}, false
	}
	m.deadline, m.wait.phase = next, held
	if next.Before(until) {
		m.wait.ask = next.Add(-m.askAhead())
	}
	return until, began
}

// handoverScale is the interval the handover skew is computed from at most.
const handoverScale = 100 * time.Millisecond

// handoverSkew is how long a backup waits before taking over from a master
// that resigned (priority 0) or fell to the fail-open priority: the skew
// time of RFC 5798, ((256 - Priority) x interval) / 256, computed from the
// master's advertisement interval or handoverScale, whichever is shorter.
// The skew only orders backups of different priorities (higher first);
// backups of equal priority time out together whatever its length, and
// the higher primary address wins the contention (Receive). At a 1 s
// interval the RFC's 0.6 s would be that long a gap for nothing: 61 ms at
// priority 100, still about 0.4 ms per priority step.
func (m *Machine) handoverSkew() time.Duration {
	return time.Duration(256-int(m.p.Priority)) * min(m.masterAdverInt, handoverScale) / 256
}

// SetCandidate starts the machine (Initialize -> Backup, section 6.4.1) when
// the node becomes a candidate, and resigns (Master: priority 0) or leaves
// the election when it stops being one.
func (m *Machine) SetCandidate(ok bool, now time.Time) []Action {
	m.candidate = ok
	switch {
	case m.state == Fault:
		return nil // SetCarrier(true) starts it
	case ok && m.state == Initialize:
		m.masterAdverInt = m.p.Interval
		return m.toBackup(now, "candidate: waiting for a master")
	case !ok && m.state != Initialize:
		return m.Shutdown(now, "no longer a candidate")
	}
	return nil
}

// SetCarrier says whether the interface has carrier. Without it the node
// leaves the election at once, sending nothing (it could not): state Fault,
// the VIP released. With it back, a candidate starts as a backup and takes
// the VIP only by the usual rules, so it does not pull the VIP back from
// an equal master that took over meanwhile — unless it was master when the
// carrier went and is back before any backup's Master_Down_Timer can have
// fired (3 x Master_Adver_Interval after its last advertisement; the skew
// only adds to that): then no other node has taken over, and it is master
// again at once, advertising, as after a resume. A short flap costs the
// flap, not a whole master down interval (testdata/core/carrier-flap.txt).
func (m *Machine) SetCarrier(up bool, now time.Time) []Action {
	switch {
	case !up:
		return m.Fault("no carrier on the interface", now)
	case m.state == Fault && m.candidate && now.Before(m.masterUntil):
		m.masterUntil = time.Time{}
		return m.becomeMaster(now, "carrier back before a backup could take over")
	case m.state == Fault:
		m.masterUntil = time.Time{}
		if m.candidate {
			m.masterAdverInt = m.p.Interval
			return m.toBackup(now, "carrier back: waiting for a master")
		}
		m.state = Initialize
		return []Action{{To: Initialize, Changed: true, Reason: "carrier back, not a candidate"}}
	}
	return nil
}

// Fault leaves the election at once for reason, sending nothing (the
// interface has no carrier, or is gone); SetCarrier(true) starts it again.
// A master remembers until when no backup can have taken over.
func (m *Machine) Fault(reason string, now time.Time) []Action {
	if m.state == Fault {
		return nil
	}
	m.masterUntil, m.owed = time.Time{}, netip.Addr{}
	if m.state == Master && !m.deadline.IsZero() {
		// deadline is our next advertisement: the last one + sendEvery. A
		// backup that missed the last one counts from the one before.
		m.masterUntil = m.deadline.Add(3*m.p.Interval - 2*m.sendEvery())
	}
	m.state, m.deadline = Fault, time.Time{}
	return []Action{{To: Fault, Changed: true, Reason: reason}}
}

// Forget makes a Fault end as a backup whatever its length: the interface
// was deleted and made again (a new MAC: the other nodes must hear our
// advertisement before our gratuitous ARP).
func (m *Machine) Forget() { m.masterUntil = time.Time{} }

// Shutdown leaves the election: a master sends priority 0 so a backup takes
// over after its handover skew (section 6.4.3), then both go to Initialize.
func (m *Machine) Shutdown(_ time.Time, reason string) []Action {
	var acts []Action
	if m.state == Master {
		acts = append(acts, Action{Send: true, Priority: 0})
	}
	if m.state != Initialize {
		acts = append(acts, Action{To: Initialize, Changed: true, Reason: reason})
	}
	m.state, m.deadline = Initialize, time.Time{}
	return acts
}

// Rejoin makes a candidate in Initialize master at once, advertising now,
// for reason: it has the VIPs bound and no other master is known, so it
// goes on serving instead of dropping them and waiting a master down
// interval as a backup. Two cases: the VIPs were bound when this process
// started (an earlier run of ours was killed) and the apiserver is
// healthy (a resume); a master that resigned for a certain failure heard
// no healthy node take over (fail open). The election corrects it as for
// any master: a stronger master's advertisement makes it a backup. It is a
// candidate from now on, as after SetCandidate(true): a later Fault ends
// as for any candidate.
func (m *Machine) Rejoin(now time.Time, reason string) []Action {
	m.candidate = true // in Fault too: carrier back starts it (a carrier lost before the first verdict)
	if m.state != Initialize {
		return nil
	}
	return m.becomeMaster(now, reason)
}

// becomeMaster makes the machine master at once, advertising now.
func (m *Machine) becomeMaster(now time.Time, reason string) []Action {
	m.took, m.wait, m.owed = NoTakeover, backupWait{}, netip.Addr{}
	m.state, m.master, m.masterAdverInt = Master, m.p.Primary, m.p.Interval
	m.deadline = now.Add(m.sendEvery())
	return []Action{{Send: true, Priority: m.p.Priority}, {To: Master, Changed: true, Reason: reason}}
}

// Timeout handles the timer at now: a backup whose Master_Down_Timer fired
// becomes master; a master sends its periodic advertisement.
func (m *Machine) Timeout(now time.Time) []Action {
	if at := m.Deadline(); at.IsZero() || now.Before(at) {
		return nil
	}
	switch m.state {
	case Backup:
		if now.Before(m.deadline) { // the question is due
			next := asking
			if m.wait.answered() {
				next = reasking
			}
			m.wait.ask, m.wait.phase = now, next
			return []Action{{Ask: true}}
		}
		t := Takeover{Cause: MasterDown}
		switch silent := now.Sub(m.wait.since).Round(time.Millisecond); {
		case m.wait.phase == soon:
			t = m.wait.soon
		case m.wait.answered() && silent >= m.p.ServedWait:
			t = Takeover{Cause: SilentServing, For: silent}
		case m.wait.answered():
			t = Takeover{Cause: SilentGone, For: silent}
		}
		acts := m.becomeMaster(now, t.String())
		m.took = t.Cause
		return acts
	case Master:
		m.deadline = now.Add(m.sendEvery())
		act := Action{Send: true, Priority: m.p.Priority}
		if m.owed.IsValid() {
			act.Reannounce, act.Other, m.lastAnswer = true, m.owed, now
			m.owed = netip.Addr{}
		}
		return []Action{act}
	}
	return nil
}

// Receive handles a valid advertisement for our VRID from src (sections 6.4.2, 6.4.3).
func (m *Machine) Receive(a Advertisement, src netip.Addr, now time.Time) []Action {
	switch m.state {
	case Backup:
		switch {
		case a.Priority == 0 && m.resignationAsSilence():
			// A failing node takes the VIP from a resigned master only when
			// its master down interval runs out, as from a silent one: a
			// healthy node takes over first, and a master that resigned
			// because its apiserver refuses keeps the VIP if none does
			// (Core.keepFailOpen): a move between two failing nodes is a
			// cost for nothing. An in-doubt backup does the same, and
			// remembers the resignation for when the doubt ends.
			m.resignHeard(now)
			if m.p.InDoubt {
				m.wait.resigned = src
			}
		case a.Priority == 0:
			// Brought forward only: a resigning master repeats its
			// priority 0 every interval until a backup takes over (Core).
			// When it first did is remembered: should we fail before our
			// skew runs out, it is a sign of life (reconsider).
			m.takeOverSoon(now, Takeover{Cause: Resigned, From: src})
			if m.wait.resignedAt.IsZero() {
				m.wait.resignedAt = now
			}
		case a.Priority == FailOpenPriority && m.followsStronger(src) && m.preempts(a.Priority, m.failingFor(src, a.Priority, now)):
			// A fail-open master beside the stronger master we follow (a
			// partition healing), which we would take the VIP from: that
			// one serves, and the fail-open master yields to it on its
			// next advertisement. Taking over would make a third holder
			// for an interval (testdata/core/failopen-beside-stronger.txt).
			// A backup that would not take it over follows it (below).
		case a.Priority == FailOpenPriority && m.preempts(a.Priority, m.failingFor(src, a.Priority, now)):
			// A master that keeps the VIP only because no node was
			// healthy: we are, and settled (or it has failed for
			// SettleWithin), so we take it within our handover skew. Its
			// advertisement is its sign of life.
			m.follow(src, a.Priority, now)
			m.wait.since = now
			m.takeOverSoon(now, m.fromLive(now))
		case !m.preempts(a.Priority, m.failingFor(src, a.Priority, now)):
			m.follow(src, a.Priority, now)
			m.masterAdverInt = a.IntervalDuration()
			m.waitFor(now)
		default:
			// Preempt and a lower priority: discard, the timer runs out
			// and we take over, from a master that is alive: no asking.
			m.follow(src, a.Priority, now)
			m.wait = backupWait{phase: soon, since: now, soon: m.fromLive(now)}
		}
	case Master:
		switch {
		case a.Priority == 0 && m.wasAbsent(now):
			// Back from an absence: the overdue timer advertises once what
			// the kernel queued is read (see the answer below).
		case a.Priority == 0:
			m.deadline = now.Add(m.sendEvery())
			return []Action{{Send: true, Priority: m.p.Priority}}
		case a.Priority > m.p.Priority || (a.Priority == m.p.Priority && src.Compare(m.p.Primary) > 0):
			m.masterAdverInt = a.IntervalDuration()
			reason := fmt.Sprintf("advertisement from %s with priority %d", src, a.Priority)
			return m.toBackupFrom(src, a.Priority, now, reason)
		case m.wasAbsent(now) && (a.Priority > FailOpenPriority || m.p.Priority == FailOpenPriority || m.p.Unsettled) &&
			!(m.p.Preempt && a.Priority < m.p.Priority && !m.p.Unsettled):
			// Our own advertisement is overdue by as long as the backups
			// wait for one: this process did not run (frozen: SIGSTOP, a
			// VM paused or migrated, a starved host) and a backup took
			// over, as it had to. It serves now; answering would take the
			// VIP back, a second move for the clients (a ping-pong). Not
			// from a fail-open master: a healthy node takes that over; nor
			// with Preempt from a weaker one while settled: it would take
			// it back anyway, later (unsettled, it would not).
			m.masterAdverInt = a.IntervalDuration()
			reason := fmt.Sprintf("%s took over while this node was not running (our advertisement %v overdue)",
				src, now.Sub(m.deadline).Round(time.Millisecond))
			return m.toBackupFrom(src, a.Priority, now, reason)
		case !m.lastAnswer.IsZero() && now.Sub(m.lastAnswer) < m.p.Interval:
			// Answered one within the interval already: discarded, as RFC
			// 5798 does, so a host sending weaker advertisements fast gets
			// at most one answer per interval, not one each.
		default:
			// RFC 5798 discards it. Another master means a split brain just
			// healed (as keepalived's garp_lower_prio_repeat assumes): tell it
			// at once and win the neighbours' caches back. Back from an
			// absence, the answer waits for the overdue timer, which runs
			// once what the kernel queued is read (Node.Step): the taker's
			// advertisement read with this one is judged as after the
			// absence and the node steps back, and no answer of ours has
			// made the taker step back too (no holder until a
			// Master_Down_Timer fired; testdata/core/frozen-master.txt).
			if m.wasAbsent(now) {
				m.owed = src
				return nil
			}
			m.lastAnswer = now
			m.deadline = now.Add(m.sendEvery())
			return []Action{{Send: true, Priority: m.p.Priority, Reannounce: true, Other: src}}
		}
	}
	return nil
}

// wasAbsent says whether a master's advertisement is overdue by two
// intervals: the backups last heard one at most an interval before it was
// due, so their Master_Down_Timer (3 x interval + skew) may have fired. Only a
// process that did not run gets there: the driver hands over packets the
// kernel queued before a timer that is due (Node.Step), so the
// advertisements of the node that took over are seen before ours is sent.
func (m *Machine) wasAbsent(now time.Time) bool {
	return !m.deadline.IsZero() && now.Sub(m.deadline) >= 2*m.p.Interval
}

func (m *Machine) toBackup(now time.Time, reason string) []Action {
	m.state, m.master, m.failOpenSince, m.owed = Backup, netip.Addr{}, time.Time{}, netip.Addr{}
	m.waitFor(now)
	return []Action{{To: Backup, Changed: true, Reason: reason}}
}

func (m *Machine) toBackupFrom(src netip.Addr, priority uint8, now time.Time, reason string) []Action {
	acts := m.toBackup(now, reason)
	m.follow(src, priority, now)
	return acts
}
