package sim

import (
	"fmt"
	"slices"
	"strings"
)

// Shrink removes the faults a failing run does not need: one at a time,
// as long as the run still breaks the same invariant. It returns the
// smallest failing run found.
func Shrink(r Result) Result {
	if r.Failure == nil {
		return r
	}
	best := r
	for progress := true; progress; {
		progress = false
		for i := range best.shape.Faults {
			fewer := slices.Delete(slices.Clone(best.shape.Faults), i, i+1)
			if len(fewer) == 0 {
				fewer = []fault{} // not nil: no faults at all
			}
			try := Run(best.Seed, fewer)
			if try.Failure != nil && try.Failure.Invariant == r.Failure.Invariant {
				best, progress = try, true
				break
			}
		}
	}
	return best
}

// Report describes a failing run: the seed, the group, the faults, the
// invariant and the trace's last lines.
func (r Result) Report(lines int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %s\n", r.Seed, r.Failure)
	fmt.Fprintf(&b, "group: %s\n", r.shape)
	fmt.Fprintf(&b, "faults (%d):\n", len(r.shape.Faults))
	for _, f := range r.shape.Faults {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	fmt.Fprintf(&b, "trace (last %d lines):\n%s\n", lines, r.trace.tail(lines))
	return b.String()
}
