package acd

import (
	"time"

	"github.com/novaedge/cpvip/internal/bind"
)

// vipState is what the guard knows of one VIP; under Guard.mu.
type vipState struct {
	// verdict is the RFC 5227 phase the latest Tell judged the VIP in
	// (Verdict reads it); Unprobed until the first.
	verdict bind.Check
	node    told      // what the reconcile step says of the VIP (Tell)
	probes  probes    // the probes sent for it and what their answers said
	wire    wireState // the wire the probes go out on, and how it fares
	others  claims    // other hosts' claims on the VIP, and this node's answers
}

// told is what the reconcile step says of a VIP (Tell).
type told struct {
	want  bool // this node should hold the VIP
	bound bool // the kernel has the VIP bound here
}

// probes is a VIP's probe schedule and the count of the probes that went
// unanswered.
type probes struct {
	sent    time.Time // the latest probe sent
	tried   time.Time // the latest probe due, sent or not (schedules the next)
	counted time.Time // the latest probe counted in quiet
	quiet   int       // probes in a row that went unanswered (by others than us and our group)
	checked bool      // a probe went unanswered since the check started or the link last changed
}

// wireState is a VIP's wire and how it fares.
type wireState struct {
	conn      Wire      // nil: none (Attach)
	failing   time.Time // since when it fails to open or to send; zero: it works
	unchecked bool      // it has failed for UncheckedAfter: the VIP is not checked
}

// claims are other hosts' claims on a VIP and this node's answers to them.
type claims struct {
	claim    *Conflict // the outstanding conflict; nil: free
	replaced *Conflict // the claim a later answer of another host replaced (forgetMembers)
	// held: the frames of hosts not known as ours held back while a
	// member heard a moment ago is resolved (Guard.wait); nil: none.
	held      *holding
	contested time.Time // the latest Contested note (a member announced the VIP)
	defended  time.Time // when this node last defended the VIP against another host
}

// denied says whether the latest Tell judged a VIP this node should hold
// not Clear: the loop is woken when the answer wait of a probe that may
// free it ends (Guard.schedule).
func (s *vipState) denied() bool { return s.node.want && s.verdict != bind.Clear }

// count counts the latest probe once its answer wait is over: unanswered
// unless the outstanding claim answered after it was sent. A probe whose
// answer may be held back (answerHeld) counts once that is settled.
func (p *probes) count(now time.Time, o *claims) {
	if p.sent.IsZero() || p.counted.Equal(p.sent) || now.Sub(p.sent) < AnswerWait || o.held.since(p.sent) {
		return
	}
	p.counted = p.sent
	if c := o.claim; c == nil || c.Last.Before(p.sent) {
		p.quiet++
		p.checked = true
	} else {
		p.quiet = 0
	}
}

// void makes the latest probe count for nothing: its answers may not
// have been heard (the link changed, the wire's reader failed).
func (p *probes) void() { p.counted = p.sent }
