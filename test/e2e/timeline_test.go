package e2e

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// timelineFile is the plot BenchmarkL2Failover writes (linked from docs/benchmarks.md).
const timelineFile = "../../bench/timeline.svg"

// writeTimeline draws, for each series, the client's probes of its median
// trial around the fault as an SVG: a tick per connect attempt, green when
// it succeeded, red when it failed (runs of equal outcomes drawn as one bar), time 0 at the fault.
func writeTimeline(path, title string, series []*l2Series) error {
	const (
		labelW, plotW, rowH, top = 560.0, 640.0, 24.0, 56.0
		from                     = -0.5 // seconds before the fault
	)
	to := 1.0
	for _, s := range series {
		if d, _ := stats(s.out); d.Seconds()+0.7 > to {
			to = d.Seconds() + 0.7
		}
	}
	to = math.Ceil(to*2) / 2
	x := func(sec float64) float64 { return labelW + (sec-from)/(to-from)*plotW }
	height := top + rowH*float64(len(series)) + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", labelW+plotW+20, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s (the median trial of each series)</text>`+"\n", html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#555">green: connected, red: failed; 0 s = the fault; made by make bench on %s</text>`+"\n", time.Now().UTC().Format("2006-01-02"))
	step := 0.5
	if to-from > 6 {
		step = 1
	}
	axisY := top + rowH*float64(len(series))
	for t := from; t <= to+1e-9; t += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/>`, x(t), top-6, x(t), axisY)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%g s</text>`+"\n", x(t), axisY+16, t)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="black" stroke-dasharray="4 3"/>`+"\n", x(0), top-10, x(0), axisY)
	for i, s := range series {
		y := top + rowH*float64(i)
		m, _ := stats(s.out)
		what := strings.NewReplacer("L2, ", "", ": client-seen outage", "", ": client outage", "", "real control plane, ", "", "holder's ", "", " of the holder", "").Replace(s.row)
		label := fmt.Sprintf("%s: %s (median %s)", s.group.tool, what, m)
		fmt.Fprintf(&b, `<text x="10" y="%.0f">%s</text>`+"\n", y+13, html.EscapeString(label))
		// One bar per run of equal outcomes.
		for i := 0; i < len(s.probe); {
			j := i
			for j+1 < len(s.probe) && s.probe[j+1].ok == s.probe[i].ok {
				j++
			}
			t0 := math.Max(from, s.probe[i].at.Sub(s.fault).Seconds())
			t1 := math.Min(to, s.probe[j].at.Sub(s.fault).Seconds()+0.01)
			if t1 > t0 {
				color := "#2e7d32"
				if !s.probe[i].ok {
					color = "#c62828"
				}
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="16" fill="%s"/>`, x(t0), y, math.Max(1, x(t1)-x(t0)), color)
			}
			i = j + 1
		}
		b.WriteString("\n")
	}
	b.WriteString("</svg>\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
