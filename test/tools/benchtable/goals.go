package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// bound is what a goal asks of a row's figures; a nil field asks nothing.
type bound struct {
	Median *float64 `json:"median,omitempty"`
	P95    *float64 `json:"p95,omitempty"`
	Vs     *vs      `json:"vs,omitempty"`
}

// vs bounds ours against another tool of the same row: ours.median /
// theirs.median ≤ Ratio (if set), ours.median - theirs.median ≤ Plus (if
// set: a cost added to what the other measures, in the row's unit).
type vs struct {
	Tool  string   `json:"tool"`
	Ratio float64  `json:"ratio,omitempty"`
	Plus  *float64 `json:"plus,omitempty"`
}

// goal is one line of bench/goals.json: a row of bench/results.json, what
// it promises, the bound that fails the bench, and the looser one the CI's
// 2-trial bench checks (nil: not checked there).
type goal struct {
	Row  string `json:"row"`
	Goal string `json:"goal"`
	bound
	CI  *bound `json:"ci,omitempty"`
	Why string `json:"why"`
}

func readGoals(path string) ([]goal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var gs []goal
	if err := json.Unmarshal(b, &gs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, g := range gs {
		if g.Row == "" || g.Goal == "" || g.Why == "" || (g.Median == nil && g.P95 == nil && g.Vs == nil) {
			return nil, fmt.Errorf("%s: goal %d (%q) needs row, goal, why and a bound", path, i+1, g.Row)
		}
		for _, b := range []*bound{&g.bound, g.CI} {
			if b != nil && b.Vs != nil && b.Vs.Ratio == 0 && b.Vs.Plus == nil {
				return nil, fmt.Errorf("%s: goal %d (%q): vs %s needs a ratio or a plus", path, i+1, g.Row, b.Vs.Tool)
			}
		}
	}
	return gs, nil
}

// verdict is a goal checked against the results.
type verdict struct {
	goal
	result string // what was measured, as the table shows it
	misses []string
	absent bool // the row was not measured
}

// check checks every goal against rows: with ci, only the goals that have a
// CI bound, with that bound.
func check(gs []goal, rows []row, ci bool) []verdict {
	byName := map[string]row{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	var out []verdict
	for _, g := range gs {
		b := g.bound
		if ci {
			if g.CI == nil {
				continue
			}
			b = *g.CI
		}
		v := verdict{goal: g}
		r, ok := byName[g.Row]
		if !ok {
			v.absent = true
			out = append(out, v)
			continue
		}
		v.result = fmt.Sprintf("median %s, p95 %s (n %d)", num(r.Ours.Median, r.Unit), p95(r.Ours, r.Unit), r.Ours.N)
		if b.Median != nil && r.Ours.Median > *b.Median {
			v.misses = append(v.misses, fmt.Sprintf("median %s > %s", num(r.Ours.Median, r.Unit), num(*b.Median, r.Unit)))
		}
		if b.P95 != nil && r.Ours.N > 1 && r.Ours.P95 > *b.P95 {
			v.misses = append(v.misses, fmt.Sprintf("p95 %s > %s", num(r.Ours.P95, r.Unit), num(*b.P95, r.Unit)))
		}
		if b.Vs != nil {
			v.misses = append(v.misses, versus(r, *b.Vs, &v.result)...)
		}
		out = append(out, v)
	}
	return out
}

// versus checks ours against another tool of the row.
func versus(r row, b vs, result *string) []string {
	for _, o := range r.Others {
		if o.Tool != b.Tool {
			continue
		}
		if b.Plus != nil {
			diff := r.Ours.Median - o.Median
			*result += fmt.Sprintf("; %+g %s against %s", diff, r.Unit, b.Tool)
			if diff > *b.Plus {
				return []string{fmt.Sprintf("%+g %s against %s > %+g", diff, r.Unit, b.Tool, *b.Plus)}
			}
			if b.Ratio == 0 {
				return nil
			}
		}
		if o.Median <= 0 {
			if r.Ours.Median <= 0 {
				return nil // both 0
			}
			return []string{fmt.Sprintf("%s measured 0, ours %s", b.Tool, num(r.Ours.Median, r.Unit))}
		}
		ratio := r.Ours.Median / o.Median
		*result += fmt.Sprintf("; %.2f × %s", ratio, b.Tool)
		if ratio > b.Ratio {
			return []string{fmt.Sprintf("%.2f × %s > %.2f", ratio, b.Tool, b.Ratio)}
		}
		return nil
	}
	return []string{fmt.Sprintf("no %s figure in the row", b.Tool)}
}

// report prints the verdicts and returns how many goals were missed; an
// absent row counts as missed when all is set.
func report(w io.Writer, vs []verdict, all bool) int {
	missed := 0
	for _, v := range vs {
		switch {
		case v.absent && all:
			missed++
			fmt.Fprintf(w, "GOAL MISSED (not measured): %s\n", v.Row)
		case v.absent:
			fmt.Fprintf(w, "goal not measured in this run: %s\n", v.Row)
		case len(v.misses) > 0:
			missed++
			fmt.Fprintf(w, "GOAL MISSED: %s: %s (%s)\n", v.Row, strings.Join(v.misses, ", "), v.result)
		default:
			fmt.Fprintf(w, "goal met: %s: %s\n", v.Row, v.result)
		}
	}
	return missed
}

// markdown is docs/benchmarks.md's Goals table, made from the goals.
func markdown(gs []goal) string {
	var b strings.Builder
	b.WriteString("| row | goal | fails the bench when | checked by CI's 2-trial bench when | why this bound |\n|---|---|---|---|---|\n")
	for _, g := range gs {
		ci := "—"
		if g.CI != nil {
			ci = g.CI.String()
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", g.Row, g.Goal, g.bound.String(), ci, g.Why)
	}
	return b.String()
}

// String says when the bound fails.
func (b bound) String() string {
	var parts []string
	if b.Median != nil {
		parts = append(parts, fmt.Sprintf("median > %g", *b.Median))
	}
	if b.P95 != nil {
		parts = append(parts, fmt.Sprintf("p95 > %g", *b.P95))
	}
	if b.Vs != nil && b.Vs.Ratio > 0 {
		parts = append(parts, fmt.Sprintf("median > %g × %s's", b.Vs.Ratio, b.Vs.Tool))
	}
	if b.Vs != nil && b.Vs.Plus != nil {
		parts = append(parts, fmt.Sprintf("median > %s's %+g", b.Vs.Tool, *b.Vs.Plus))
	}
	return strings.Join(parts, " or ")
}
