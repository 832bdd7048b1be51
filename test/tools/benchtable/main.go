// Command benchtable prints bench/results.json as a Markdown table.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
)

type figure struct {
	Median, P95 float64
	N           int
}

type compared struct {
	Tool string
	figure
}

type row struct {
	Name     string     `json:"name"`
	Unit     string     `json:"unit"`
	Ours     figure     `json:"ours"`
	Others   []compared `json:"others"`
	Note     string     `json:"note"`
	Measured string     `json:"measured"`
}

// Usage: benchtable [-goals FILE [-ci] [-all]] [RESULTS]: prints RESULTS
// (bench/results.json) as a Markdown table, then, with -goals, checks each
// goal against it and exits 1 if one is missed (-ci: the CI bounds of the
// 2-trial bench; -all: a goal whose row was not measured is missed).
// benchtable -goals-table FILE prints docs/benchmarks.md's Goals table.
func main() {
	goalsFile := flag.String("goals", "", "check the goals in this file")
	ci := flag.Bool("ci", false, "check the CI bounds (a 2-trial bench)")
	all := flag.Bool("all", false, "a goal whose row was not measured is missed")
	table := flag.String("goals-table", "", "print the Markdown table of the goals in this file and exit")
	flag.Parse()
	if *table != "" {
		gs, err := readGoals(*table)
		if err != nil {
			fail(err)
		}
		fmt.Print(markdown(gs))
		return
	}
	path := "bench/results.json"
	if flag.NArg() > 0 {
		path = flag.Arg(0)
	}
	rows, err := readRows(path)
	if err != nil {
		fail(err)
	}
	printTable(rows)
	if *goalsFile == "" {
		return
	}
	gs, err := readGoals(*goalsFile)
	if err != nil {
		fail(err)
	}
	fmt.Println()
	if n := report(os.Stdout, check(gs, rows, *ci), *all); n > 0 {
		fmt.Fprintf(os.Stderr, "benchtable: %d goal(s) of %s missed\n", n, *goalsFile)
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchtable:", err)
	os.Exit(1)
}

func readRows(path string) ([]row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []row
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

func printTable(rows []row) { fmt.Print(table(rows, nil)) }

// table is rows as a Markdown table; a row whose name ids holds starts
// with the anchor r-ID, the target of the figures docs quote from it.
func table(rows []row, ids map[string]string) string {
	var b strings.Builder
	b.WriteString("| measurement | novaedge-cpvip median | p95 | n | compared with | median | p95 | n | ratio |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		name := r.Name
		if r.Note != "" {
			name += " (" + r.Note + ")"
		}
		if id, ok := ids[r.Name]; ok {
			name = `<a id="r-` + id + `"></a>` + name
		}
		ours := fmt.Sprintf("| %s | %s | %s | %d ", name, num(r.Ours.Median, r.Unit), p95(r.Ours, r.Unit), r.Ours.N)
		if len(r.Others) == 0 {
			b.WriteString(ours + "| | | | | |\n")
		}
		for i, o := range r.Others {
			if i > 0 { // the same measurement, next tool
				ours = "| ″ | | | "
			}
			ratio := ""
			if o.Median > 0 {
				ratio = fmt.Sprintf("%.2f", r.Ours.Median/o.Median)
			}
			fmt.Fprintf(&b, "%s| %s | %s | %s | %d | %s |\n", ours, o.Tool, num(o.Median, r.Unit), p95(o.figure, r.Unit), o.N, ratio)
		}
	}
	return b.String()
}

// p95 is "-" for a single measurement.
func p95(f figure, unit string) string {
	if f.N < 2 {
		return "-"
	}
	return num(f.P95, unit)
}

func num(v float64, unit string) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}
