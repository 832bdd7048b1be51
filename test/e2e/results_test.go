package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// resultsFile is where every benchmark records its rows; `make bench`
// prints them as a table (test/tools/benchtable).
const resultsFile = "../../bench/results.json"

// Figure is one measured quantity: median, 95th percentile and trials.
type Figure struct {
	Median float64 `json:"median"`
	P95    float64 `json:"p95"`
	N      int     `json:"n"`
}

// Row is one benchmark line: ours, and the tools we compare with.
type Row struct {
	Name     string     `json:"name"`
	Unit     string     `json:"unit"`
	Ours     Figure     `json:"ours"`
	Others   []Compared `json:"others,omitempty"`
	Note     string     `json:"note,omitempty"`
	Measured string     `json:"measured"`
}

// Compared is another tool's figure for the same row.
type Compared struct {
	Tool string `json:"tool"`
	Figure
}

// versus is a row's comparison with one tool.
func versus(tool string, f Figure) []Compared { return []Compared{{Tool: tool, Figure: f}} }

// record merges row into the results file (rows keyed by name).
func record(t testing.TB, row Row) {
	t.Helper()
	row.Measured = time.Now().UTC().Format(time.RFC3339)
	var rows []Row
	if b, err := os.ReadFile(resultsFile); err == nil {
		_ = json.Unmarshal(b, &rows)
	}
	kept := rows[:0]
	for _, r := range rows {
		if r.Name != row.Name {
			kept = append(kept, r)
		}
	}
	rows = append(kept, row)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	b, _ := json.MarshalIndent(rows, "", "  ")
	if err := os.MkdirAll(filepath.Dir(resultsFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resultsFile, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// durFigure summarises durations in milliseconds.
func durFigure(ds []time.Duration) Figure {
	m, p := stats(ds)
	return Figure{Median: float64(m.Microseconds()) / 1000, P95: float64(p.Microseconds()) / 1000, N: len(ds)}
}
