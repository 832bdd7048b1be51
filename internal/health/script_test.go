package health

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/novaedge/cpvip/internal/testing/scenario"
)

// TestJudgeScripts runs the scripted scenarios in testdata/judge: check
// results into one Judge on a manual clock, the transitions it returns and
// the state it is in after each. Each check starts when the one before
// says (Judge.Next), or at once when the one before outlasted that, as
// Checker.Run schedules them. Regenerate the expected output with -rewrite.
//
//	judge [fail=N] [rise=N] [interval=D] [fast=D]   a new judge (3, 1, 1s, 100ms: the defaults)
//	check passed|failed|refused|drained|hung [stalled] [took=D] [times=N]
//	thresholds fail=N rise=N                       a reload (Judge.SetThresholds)
//	closed                                         the apiserver closes the kept connection as the last check ends (Judge.Closed): the next check starts then
func TestJudgeScripts(t *testing.T) {
	scenario.Walk(t, "testdata/judge", func() func(*testing.T, *datadriven.TestData) string { return (&judgeScript{}).run })
}

// judgeScript is one scenario's judge and clock.
type judgeScript struct {
	j              *Judge
	interval, fast time.Duration
	next           time.Duration // when the next check starts, from the scenario's start
	ended          time.Duration // when the last check ended
}

func (s *judgeScript) run(t *testing.T, d *datadriven.TestData) string {
	c := scenario.New(t, d)
	arg, num, dur := c.Arg, c.Int, c.Dur
	if d.Cmd != "judge" && s.j == nil {
		d.Fatalf(t, "no judge yet: start with judge")
	}
	switch d.Cmd {
	case "judge":
		s.j = NewJudge(num("fail", 3), num("rise", 1))
		s.interval, s.fast, s.next = dur("interval", time.Second), dur("fast", 100*time.Millisecond), 0
		return s.state()
	case "closed":
		s.next = s.ended
		tr, ok := s.j.Closed()
		return fmt.Sprintf("%s closed: %s", s.ended, transition(tr, ok)) + s.state()
	case "thresholds":
		s.j.SetThresholds(num("fail", 3), num("rise", 1))
		return s.state()
	case "check":
		if len(d.CmdArgs) == 0 {
			d.Fatalf(t, "check needs an outcome")
		}
		outcomes := map[string]Outcome{"passed": Passed, "failed": Failed, "refused": Refused, "drained": Drained, "hung": Hung}
		out, ok := outcomes[d.CmdArgs[0].Key]
		if !ok {
			d.Fatalf(t, "unknown outcome %s", d.CmdArgs[0].Key)
		}
		_, stalled := arg("stalled")
		r := Result{Outcome: out, Stalled: stalled, Duration: dur("took", 0)}
		if !r.OK() {
			r.Reason = out.String()
		}
		var b strings.Builder
		for range num("times", 1) {
			start := s.next
			fmt.Fprintf(&b, "%s %s", start, out)
			if stalled {
				b.WriteString(" stalled")
			}
			if r.Duration > 0 {
				fmt.Fprintf(&b, " took %s", r.Duration)
			}
			tr, ok := s.j.Observe(r)
			b.WriteString(": " + transition(tr, ok))
			s.next, s.ended = start+max(s.j.Next(s.interval, s.fast), r.Duration), start+r.Duration
		}
		return b.String() + s.state()
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	return ""
}

// transition prints what the judge returned.
func transition(tr Transition, ok bool) string {
	if !ok {
		return "no transition\n"
	}
	var b strings.Builder
	b.WriteString(tr.State.String())
	if tr.Changed {
		b.WriteString(" (changed)")
	}
	fmt.Fprintf(&b, " settled=%v certain=%v", tr.Settled, tr.Certain)
	if tr.InDoubt {
		b.WriteString(" in doubt")
	}
	return b.String() + "\n"
}

// state prints the judge's state, settledness, failures counted and when
// the next check starts.
func (s *judgeScript) state() string {
	return fmt.Sprintf("= %s settled=%v failures=%d next=%s\n", s.j.State(), s.j.Settled(), s.j.Failures(), s.next)
}
