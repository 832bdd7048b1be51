package lab

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Sample is one request of the client tool.
type Sample struct {
	At      time.Time // sent
	Latency time.Duration
	OK      bool
	Err     string
}

// Done is when the answer (or the error) came.
func (s Sample) Done() time.Time { return s.At.Add(s.Latency) }

// Samples parses every line of the client tool so far:
// "UNIXMILLI ok|fail LATENCY [error]".
func Samples(p *Process) []Sample { return parseSamples(p.linesFrom(0)) }

// RecentSamples parses the client tool's last n lines only: for polling
// while a long run's output grows.
func RecentSamples(p *Process, n int) []Sample {
	return parseSamples(p.linesFrom(max(0, p.Lines()-n)))
}

func parseSamples(lines []string) []Sample {
	var out []Sample
	for _, l := range lines {
		f := strings.SplitN(l, " ", 4)
		if len(f) < 3 {
			continue
		}
		ms, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		lat, _ := strconv.ParseFloat(f[2], 64) // milliseconds, to the microsecond
		s := Sample{At: time.UnixMilli(ms), Latency: time.Duration(lat * float64(time.Millisecond)), OK: f[1] == "ok"}
		if len(f) == 4 {
			s.Err = f[3]
		}
		out = append(out, s)
	}
	return out
}

// FirstOK waits up to d for the client's first successful request sent at
// or after from and returns when its answer came. Each poll parses only
// the lines added since the one before.
func FirstOK(p *Process, from time.Time, d time.Duration) (time.Time, error) {
	var at time.Time
	seen := 0
	err := Eventually(d, func() error {
		lines := p.linesFrom(seen)
		seen += len(lines)
		for _, s := range parseSamples(lines) {
			if s.OK && !s.At.Before(from) {
				at = s.Done()
				return nil
			}
		}
		return fmt.Errorf("no request through the VIP succeeded")
	})
	return at, err
}

// RequestCounts counts the client's requests sent in [from, to).
func RequestCounts(ss []Sample, from, to time.Time) (ok, failed int, firstErr string) {
	for _, s := range ss {
		if s.At.Before(from) || !s.At.Before(to) {
			continue
		}
		if s.OK {
			ok++
			continue
		}
		failed++
		if firstErr == "" {
			firstErr = s.Err
		}
	}
	return ok, failed, firstErr
}

// RequestRuns compresses the client's requests sent in [from, to) into runs:
// "+0.00s ok×12 +0.25s fail×3 (error)".
func RequestRuns(ss []Sample, from, to time.Time) string {
	var b strings.Builder
	var last *Sample
	n := 0
	flush := func() {
		if last == nil {
			return
		}
		what := "ok"
		if !last.OK {
			what = "fail (" + last.Err + ")"
		}
		fmt.Fprintf(&b, "%+.2fs %s×%d ", last.At.Sub(from).Seconds(), what, n)
	}
	for i := range ss {
		s := &ss[i]
		if s.At.Before(from) || !s.At.Before(to) {
			continue
		}
		if last == nil || s.OK != last.OK {
			flush()
			last, n = s, 0
		}
		n++
	}
	flush()
	return strings.TrimSpace(b.String())
}

// FailedSpan is the time from the first failed request in [from, to) to the
// first success after the last failure there (0 with none failed).
func FailedSpan(ss []Sample, from, to time.Time) time.Duration {
	var first, last time.Time
	for _, s := range ss {
		if s.At.Before(from) || !s.At.Before(to) || s.OK {
			continue
		}
		if first.IsZero() {
			first = s.At
		}
		last = s.At
	}
	if first.IsZero() {
		return 0
	}
	for _, s := range ss {
		if s.OK && s.At.After(last) {
			return s.At.Sub(first)
		}
	}
	return to.Sub(first)
}
