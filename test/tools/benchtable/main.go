// Command benchtable prints bench/results.json as a Markdown table.
package main

import (
	"encoding/json"
	"fmt"
	"os"
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

func main() {
	path := "bench/results.json"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	var rows []row
	if err := json.Unmarshal(b, &rows); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	fmt.Println("| measurement | novaedge-cpvip median | p95 | n | compared with | median | p95 | n | ratio |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		name := r.Name
		if r.Note != "" {
			name += " (" + r.Note + ")"
		}
		ours := fmt.Sprintf("| %s | %s | %s | %d ", name, num(r.Ours.Median, r.Unit), p95(r.Ours, r.Unit), r.Ours.N)
		if len(r.Others) == 0 {
			fmt.Println(ours + "| | | | | |")
		}
		for i, o := range r.Others {
			if i > 0 { // the same measurement, next tool
				ours = "| ″ | | | "
			}
			ratio := ""
			if o.Median > 0 {
				ratio = fmt.Sprintf("%.2f", r.Ours.Median/o.Median)
			}
			fmt.Printf("%s| %s | %s | %s | %d | %s |\n", ours, o.Tool, num(o.Median, r.Unit), p95(o.figure, r.Unit), o.N, ratio)
		}
	}
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
