package vrrp

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/testing/scenario"
)

// TestCoreScripts runs the scripted scenarios in testdata/core: events
// into one Core on a manual clock, the effects it returns and the state it
// is in after each. Regenerate the expected output with -rewrite.
//
//	core [priority=N] [interval=D] [failopen] [preempt] [resume] [servedwait=D] [settlewithin=D]
//	at D                         the clock, from the start (0s); the timers due meanwhile run
//	health STATE [settled] [certain] [indoubt] [reason=…]
//	advert from=ADDR priority=N [interval=D]
//	adverts from=ADDR priority=N until=D [every=D]: one now, then every D (the interval) before until, the timers run between
//	served [member] [seen=D]     an answer, seen at D (default: now)
//	answering member|stranger|off  from now on every question is answered 1ms after it is asked (or not)
//	base N                       a reload of the priority (SetBase)
//	freeze D                     the process does not run for D: the clock moves, no timer runs
//	carrier up|down
//	gone deleted|made-again
//	lapsed
//	timeout                      runs what is due now
//	until master|backup|initialize|fault [within=D]: runs the timers as they fall due
//	shutdown
func TestCoreScripts(t *testing.T) {
	scenario.Walk(t, "testdata/core", func() func(*testing.T, *datadriven.TestData) string { return (&script{}).run })
}

// script is one scenario's core and clock.
type script struct {
	c   *Core
	now time.Time
	// answering: who answers each question, 1 ms after it (answering):
	// "member", "stranger", or "" for nobody.
	answering string
}

var scriptStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	c := scenario.New(t, d)
	arg, dur, first := c.Arg, c.Dur, c.First
	if d.Cmd != "core" && s.c == nil {
		d.Fatalf(t, "no core yet: start with core")
	}
	switch d.Cmd {
	case "core":
		var prio uint64 = 100
		if v, ok := arg("priority"); ok {
			fmt.Sscan(v, &prio)
		}
		_, failOpen := arg("failopen")
		_, preempt := arg("preempt")
		_, resume := arg("resume")
		cfg := Config{VIPs: []netip.Prefix{netip.MustParsePrefix("192.0.2.100/32")}, VRID: 51, Priority: uint8(prio),
			FailOpen: failOpen, Preempt: preempt, Resume: resume, Interval: dur("interval", time.Second), Sends: 1,
			ServedWait: dur("servedwait", 0), SettleWithin: dur("settlewithin", 0)}
		s.now = scriptStart
		s.c = NewCore(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		s.c.SetPrimary(netip.MustParseAddr("192.0.2.11"))
		s.c.Start(s.now)
		s.c.Carrier(true, s.now)
	case "at":
		x, err := time.ParseDuration(first())
		if err != nil {
			d.Fatalf(t, "at: %v", err)
		}
		at := scriptStart.Add(x)
		if at.Before(s.now) {
			d.Fatalf(t, "at %s: the clock runs forward only", first())
		}
		var b strings.Builder
		for due := s.c.Deadline(); !due.IsZero() && !due.After(at); due = s.c.Deadline() {
			s.now = later(due, s.now) // after a freeze, what was due runs now
			b.WriteString(s.timeout())
		}
		s.now = at
		return b.String()
	case "health":
		st := map[string]health.State{"healthy": health.Healthy, "unhealthy": health.Unhealthy, "draining": health.Draining}[first()]
		_, settled := arg("settled")
		_, certain := arg("certain")
		_, doubt := arg("indoubt")
		reason, _ := arg("reason")
		s.c.Health(health.Transition{State: st, Changed: true, Settled: settled, Certain: certain, InDoubt: doubt, Last: health.Result{Reason: reason}}, s.now)
	case "advert":
		from, _ := arg("from")
		var prio uint64
		if v, ok := arg("priority"); ok {
			fmt.Sscan(v, &prio)
		}
		a := Advertisement{VRID: 51, Priority: uint8(prio), Interval: Centiseconds(dur("interval", time.Second)),
			Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.100")}}
		s.c.Receive(a, netip.MustParseAddr(from), s.now)
	case "adverts":
		from, _ := arg("from")
		var prio uint64
		if v, ok := arg("priority"); ok {
			fmt.Sscan(v, &prio)
		}
		v, ok := arg("until")
		if !ok {
			d.Fatalf(t, "adverts needs until")
		}
		x, err := time.ParseDuration(v)
		if err != nil {
			d.Fatalf(t, "until: %v", err)
		}
		until, every := scriptStart.Add(x), dur("every", s.c.Interval())
		a := Advertisement{VRID: 51, Priority: uint8(prio), Interval: Centiseconds(dur("interval", time.Second)),
			Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.100")}}
		var b strings.Builder
		for at := s.now; at.Before(until); at = at.Add(every) {
			for due := s.c.Deadline(); !due.IsZero() && !due.After(at); due = s.c.Deadline() {
				s.now = later(due, s.now)
				b.WriteString(s.timeout())
			}
			s.now = at
			s.c.Receive(a, netip.MustParseAddr(from), s.now)
			b.WriteString(s.effects())
		}
		return b.String() + s.state()
	case "served":
		_, member := arg("member")
		seen := s.now
		if v, ok := arg("seen"); ok {
			x, err := time.ParseDuration(v)
			if err != nil {
				d.Fatalf(t, "seen: %v", err)
			}
			seen = scriptStart.Add(x)
		}
		s.c.Served(member, seen)
	case "answering":
		who, ok := map[string]string{"member": "member", "stranger": "stranger", "off": ""}[first()]
		if !ok {
			d.Fatalf(t, "answering member|stranger|off, not %s", first())
		}
		s.answering = who
	case "base":
		var prio uint64
		fmt.Sscan(first(), &prio)
		s.c.SetBase(uint8(prio), s.now)
	case "freeze":
		x, err := time.ParseDuration(first())
		if err != nil {
			d.Fatalf(t, "freeze: %v", err)
		}
		s.now = s.now.Add(x)
		return ""
	case "carrier":
		s.c.Carrier(first() == "up", s.now)
	case "gone":
		s.c.Gone(map[string]Gone{"deleted": Deleted, "made-again": MadeAgain}[first()], s.now)
	case "lapsed":
		s.c.Lapsed(s.now)
	case "timeout":
		s.c.Timeout(s.now)
	case "until":
		want := first()
		end := s.now.Add(dur("within", time.Minute))
		var b strings.Builder
		for s.c.State().String() != want {
			at := s.c.Deadline()
			if at.IsZero() || at.After(end) {
				fmt.Fprintf(&b, "not %s by %s\n", want, end.Sub(scriptStart))
				break
			}
			s.now = later(at, s.now)
			b.WriteString(s.timeout())
		}
		return b.String() + s.state()
	case "shutdown":
		s.c.Shutdown(s.now)
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	return s.effects() + s.state()
}

// timeout runs the timers due now and prints their effects; a question
// is answered 1 ms later when someone answers (answering).
func (s *script) timeout() string {
	s.c.Timeout(s.now)
	out := s.effects()
	if s.answering != "" && strings.Contains(out, " ask\n") {
		at := s.now.Add(time.Millisecond)
		s.c.Served(s.answering == "member", at)
		out += fmt.Sprintf("%s answered by a %s\n", at.Sub(scriptStart), s.answering)
	}
	return out
}

// effects prints what the core asked since the last call, stamped with
// the clock.
func (s *script) effects() string {
	var b strings.Builder
	for _, e := range s.c.Ready() {
		fmt.Fprintf(&b, "%s ", s.now.Sub(scriptStart))
		switch e.Kind {
		case Advertise:
			fmt.Fprintf(&b, "advertise priority=%d\n", e.Priority)
		case Ask:
			b.WriteString("ask\n")
		case Decide:
			fmt.Fprintf(&b, "decide hold=%v\n", e.Hold)
		case Report:
			fmt.Fprintf(&b, "%s -> %s: %s\n", e.From, e.To, e.Reason)
		}
	}
	return b.String()
}

// state prints the core's state, priority and phase.
func (s *script) state() string {
	return fmt.Sprintf("= %s priority=%d phase=%s\n", s.c.State(), s.c.Priority(), s.c.Phase())
}
