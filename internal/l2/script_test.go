package l2

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/novaedge/cpvip/internal/testing/scenario"
)

// TestBurstScripts runs the scripted scenarios in testdata/burst: one
// VIP's announcement schedule (Burst) on a manual clock, asked what the
// rest of the node says each time an announcement is due (Gates), asked
// through Burst.Go as the node (internal/l2node) asks it. Regenerate the expected
// output with -rewrite.
//
//	burst [repeat=N] [gap=D] [refresh=D]     a takeover at 0s (1, RepeatGap, 0)
//	due [at=D] [wanted] [leading] [fresh]    the announcement due (at its time, or later at D): goes, does not, or waits (late)
//	caughtup [wanted] [leading] [fresh]      a late repeat's gates once the election read what was queued
func TestBurstScripts(t *testing.T) {
	scenario.Walk(t, "testdata/burst", func() func(*testing.T, *datadriven.TestData) string { return (&burstScript{}).run })
}

// burstScript is one scenario's burst and clock.
type burstScript struct {
	b             *Burst
	repeat        int
	gap, refresh  time.Duration
	due, now      time.Duration // the next announcement's time, the clock (zero: the takeover)
	over, waiting bool          // the burst ended; a late repeat waits for the election
	first         Gates         // the gates the due announcement found
}

// clock is the scenario's time (Burst.Go's now).
func (s *burstScript) clock() time.Time { return burstStart.Add(s.now) }

func (s *burstScript) run(t *testing.T, d *datadriven.TestData) string {
	c := scenario.New(t, d)
	has, dur := c.Has, c.Dur
	gates := func() Gates { return Gates{Wanted: has("wanted"), Leading: has("leading"), Fresh: has("fresh")} }
	if d.Cmd != "burst" && s.b == nil {
		d.Fatalf(t, "no burst yet: start with burst")
	}
	if d.Cmd != "burst" && s.over {
		d.Fatalf(t, "the burst is over")
	}
	switch d.Cmd {
	case "burst":
		*s = burstScript{b: NewBurst(burstStart), repeat: 1, gap: dur("gap", RepeatGap), refresh: dur("refresh", 0)}
		s.repeat = c.Int("repeat", 1)
		return fmt.Sprintf("next due %s\n", s.due)
	case "due":
		if s.waiting {
			d.Fatalf(t, "a late repeat waits for the election: caughtup")
		}
		s.now = dur("at", s.due)
		if s.now < s.due {
			d.Fatalf(t, "at %s: before the announcement is due (%s)", s.now, s.due)
		}
		s.first = gates()
		// Go stops where a late repeat waits; caughtup asks it again.
		goes := s.b.Go(s.clock, func() Gates { return s.first }, func(time.Time) bool { s.waiting = true; return false })
		switch {
		case s.waiting:
			return fmt.Sprintf("%s late by %s: waits until the election has read what was queued\n", s.now, s.now-s.due)
		case !goes:
			return s.end("does not go")
		}
		return s.announce()
	case "caughtup":
		if !s.waiting {
			d.Fatalf(t, "no late repeat waits")
		}
		s.waiting = false
		asked, then := 0, gates()
		next := func() Gates {
			if asked++; asked == 1 {
				return s.first
			}
			return then
		}
		if !s.b.Go(s.clock, next, func(time.Time) bool { return true }) {
			return s.end("does not go")
		}
		return s.announce()
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	return ""
}

var burstStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// announce makes the announcement due and says what went and when the
// next is due.
func (s *burstScript) announce() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s announce", s.now)
	if s.b.Self() {
		b.WriteString(" self,")
	}
	b.WriteString(" vip\n")
	next := s.b.Sent(burstStart.Add(s.now), s.repeat, s.gap, s.refresh)
	if next.IsZero() {
		s.over = true
		b.WriteString("burst over\n")
		return b.String()
	}
	s.due = next.Sub(burstStart)
	fmt.Fprintf(&b, "next due %s\n", s.due)
	return b.String()
}

// end ends the burst: what was due does not go.
func (s *burstScript) end(why string) string {
	s.over = true
	return fmt.Sprintf("%s %s: burst over\n", s.now, why)
}
