package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/benchmarks.md's Goals table")

const (
	docFile   = "../../../docs/benchmarks.md"
	goalsFile = "../../../bench/goals.json"
	begin     = "<!-- goals: generated from bench/goals.json by go test ./test/tools/benchtable -update -->\n"
	end       = "<!-- end of goals -->\n"
)

// TestGoalsTableIsGenerated: docs/benchmarks.md's Goals table is the goals
// file, so a goal cannot be promised in the docs without a bound that fails
// the bench.
func TestGoalsTableIsGenerated(t *testing.T) {
	gs, err := readGoals(goalsFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers of the generated Goals table", docFile)
	}
	want := doc[:i+len(begin)] + markdown(gs) + doc[j:]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(docFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s's Goals table is out of date: go test ./test/tools/benchtable -update", docFile)
}

func f(v float64) *float64 { return &v }

// TestCheck: a bound fails on a miss, a ratio against another tool, a row
// not measured only when all rows must be; the CI bound replaces the full
// one, and a goal without one is not checked there.
func TestCheck(t *testing.T) {
	rows := []row{
		{Name: "a", Unit: "ms", Ours: figure{Median: 100, P95: 200, N: 20}, Others: []compared{{Tool: "k", figure: figure{Median: 90}}}},
		{Name: "b", Unit: "ms", Ours: figure{Median: 0, P95: 1, N: 2}},
	}
	gs := []goal{
		{Row: "a", bound: bound{Median: f(150), P95: f(150)}, CI: &bound{Median: f(300)}},
		{Row: "a", bound: bound{Vs: &vs{Tool: "k", Ratio: 1.05}}},
		{Row: "b", bound: bound{Median: f(0), P95: f(0)}},
		{Row: "c", bound: bound{Median: f(1)}},
	}
	vs := check(gs, rows, false)
	var sb strings.Builder
	if n := report(&sb, vs, false); n != 3 {
		t.Fatalf("%d missed, want 3 (p95 of a, ratio of a, p95 of b):\n%s", n, sb.String())
	}
	if n := report(&sb, vs, true); n != 4 {
		t.Fatalf("%d missed with all rows required, want 4", n)
	}
	if n := report(&sb, check(gs, rows, true), true); n != 0 {
		t.Fatalf("CI: %d missed, want 0 (a's CI bound holds, the others have none)", n)
	}
}

// A Plus bound is a cost added to the other tool's figure.
func TestCheckPlus(t *testing.T) {
	rows := []row{{Name: "a", Unit: "ms", Ours: figure{Median: 1.25, N: 20}, Others: []compared{{Tool: "direct", figure: figure{Median: 1.0}}}}}
	var sb strings.Builder
	if n := report(&sb, check([]goal{{Row: "a", bound: bound{Vs: &vs{Tool: "direct", Plus: f(0.2)}}}}, rows, false), false); n != 1 {
		t.Fatalf("+0.25 ms against +0.2 allowed: %d missed, want 1:\n%s", n, sb.String())
	}
	if n := report(&sb, check([]goal{{Row: "a", bound: bound{Vs: &vs{Tool: "direct", Plus: f(0.3)}}}}, rows, false), false); n != 0 {
		t.Fatalf("+0.25 ms against +0.3 allowed: %d missed, want 0:\n%s", n, sb.String())
	}
}

// TestGoalsFileReads: every goal has a row, a text, a reason and a bound.
func TestGoalsFileReads(t *testing.T) {
	if _, err := readGoals(goalsFile); err != nil {
		t.Fatal(err)
	}
}
