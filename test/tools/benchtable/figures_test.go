package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/docgen"
)

// The docs an operator reads: the README and docs/.
const (
	readmeFile   = "../../../README.md"
	docsDir      = "../../../docs"
	resultsFile  = "../../../bench/results.json"
	resultsBegin = "<!-- BEGIN GENERATED: results -->\n"
	resultsEnd   = "<!-- END GENERATED: results -->\n"
)

// TestResultsTableIsGenerated: docs/benchmarks.md's results table is
// bench/results.json, each row with the anchor its figures are quoted by;
// every row has an id and every id names a row that is measured or has a
// goal.
func TestResultsTableIsGenerated(t *testing.T) {
	rows, err := readRows(resultsFile)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := readGoals(goalsFile)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, g := range gs {
		known[g.Row] = true
	}
	byName := map[string]string{}
	for id, name := range rowIDs {
		byName[name] = id
	}
	for _, r := range rows {
		known[r.Name] = true
		if _, ok := byName[r.Name]; !ok {
			t.Errorf("bench/results.json's row %q has no id in ids.go", r.Name)
		}
	}
	for id, name := range rowIDs {
		if !known[name] {
			t.Errorf("ids.go: %s names %q, which is neither measured nor a goal's row", id, name)
		}
	}
	if err := docgen.Check(docFile, resultsBegin, resultsEnd, table(rows, byName), *update,
		"go test ./test/tools/benchtable -update"); err != nil {
		t.Fatal(err)
	}
}

// figureLink is a measured figure quoted in the docs: a link whose text is
// the figure and whose target is its row's anchor in benchmarks.md; the
// title, if any, picks the statistic ("p95", a tool, "TOOL p95").
var figureLink = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]*benchmarks\.md)#r-([a-z0-9-]+)(?:\s+"([^"]*)")?\)`)

// TestDocFigures: every figure the README and docs/ quote from a row is
// that row's figure in bench/results.json, as the tables write it.
func TestDocFigures(t *testing.T) {
	rows, err := readRows(resultsFile)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]row{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	n := 0
	forEachDocLine(t, func(file string, line int, text string) {
		for _, m := range figureLink.FindAllStringSubmatch(text, -1) {
			n++
			where := fmt.Sprintf("%s:%d: [%s](…#r-%s)", file, line, m[1], m[3])
			name, ok := rowIDs[m[3]]
			if !ok {
				t.Errorf("%s: no row has the id %q (test/tools/benchtable/ids.go)", where, m[3])
				continue
			}
			r, ok := byName[name]
			if !ok {
				t.Errorf("%s: the row %q is not measured in bench/results.json", where, name)
				continue
			}
			v, err := stat(r, m[4])
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if want := []string{num(v, r.Unit), short(v, r.Unit)}; !slices.Contains(want, m[1]) {
				t.Errorf("%s: the results say %q (or %q)", where, want[0], want[1])
			}
		}
	})
	t.Logf("%d quoted figures checked", n)
}

// stat is the figure of r a link's title picks: "" our median, "p95" our
// 95th percentile, "TOOL" or "TOOL p95" another tool's (its name's prefix).
func stat(r row, title string) (float64, error) {
	tool, p := strings.CutSuffix(title, "p95")
	tool = strings.TrimSpace(tool)
	f := r.Ours
	if tool != "" {
		found := false
		for _, o := range r.Others {
			if strings.HasPrefix(o.Tool, tool) {
				f, found = o.figure, true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("the row has no figure of a tool named %q", tool)
		}
	}
	if p {
		return f.P95, nil
	}
	return f.Median, nil
}

var (
	// bareFigure is a time, a size, a share or a count with its unit.
	bareFigure = `\d+(?:\.\d+)?\s?(?:ms|µs|s|min|MiB|requests|%|/s)`
	// looseFigure is a bare figure said to be measured: a figure next to
	// "measured", "median" or "p95".
	looseFigure = regexp.MustCompile(`(?i)\b(?:measured|observed)\b[^.;]{0,40}?\b` + bareFigure +
		`|\b(?:median|p95)\s(?:of\s|at\s)?` + bareFigure +
		`|` + bareFigure + `(?:\s\w+)?\s(?:measured|observed|median|p95)\b`)
)

// TestNoLooseFigures: a measured figure is quoted from the results (a link
// to its row), not typed: outside generated sections and code, no bare
// figure stands next to "measured", "median" or "p95".
func TestNoLooseFigures(t *testing.T) {
	forEachDocLine(t, func(file string, line int, text string) {
		text = figureLink.ReplaceAllString(text, "FIGURE")
		if m := looseFigure.FindString(text); m != "" {
			t.Errorf("%s:%d: %q: a measured figure typed by hand (quote it as a link to its row in benchmarks.md's results, or state it as a bound)", file, line, m)
		}
	})
}

// TestDocDefaults: where the docs give a setting's default ("`NAME`
// (default X)", "NAME defaults to X"), X is the config's default.
func TestDocDefaults(t *testing.T) {
	type setting struct {
		def string
		dur bool
	}
	settings := map[string]setting{}
	ct := reflect.TypeOf(config.Config{})
	for i := range ct.NumField() {
		f := ct.Field(i)
		env, def := f.Tag.Get("envconfig"), f.Tag.Get("default")
		if env == "" {
			continue
		}
		s := setting{def: def, dur: f.Type == reflect.TypeOf(time.Duration(0))}
		settings[env] = s
		for _, p := range []string{"NOVAEDGE_CP_VIP_", "NOVAEDGE_"} {
			if short, ok := strings.CutPrefix(env, p); ok {
				settings[short] = s
				break
			}
		}
	}
	said := regexp.MustCompile("\\b([A-Z][A-Z0-9_]{2,})`?[^.;\\n`]{0,30}?\\bdefaults?(?: to| is|:)?\\s+`?([0-9][0-9.:]*\\s?(?:ms|s|m|h)?|[a-z][a-z0-9]*)\\b")
	n := 0
	forEachDocLine(t, func(file string, line int, text string) {
		for _, m := range said.FindAllStringSubmatch(text, -1) {
			s, ok := settings[m[1]]
			if !ok {
				continue
			}
			n++
			got := strings.ReplaceAll(m[2], " ", "")
			same := got == s.def
			switch got {
			case "on", "yes":
				same = s.def == "true"
			case "off", "no":
				same = s.def == "false"
			}
			if s.dur {
				a, err1 := time.ParseDuration(got)
				b, err2 := time.ParseDuration(s.def)
				same = err1 == nil && err2 == nil && a == b
			}
			if !same {
				t.Errorf("%s:%d: %s's default is %q, not %q", file, line, m[1], s.def, m[2])
			}
		}
	})
	t.Logf("%d defaults checked", n)
}

// forEachDocLine calls fn with every line of the README and docs/*.md
// outside code blocks, HTML comments and generated sections.
func forEachDocLine(t *testing.T, fn func(file string, line int, text string)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append([]string{readmeFile}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(f, "../../../")
		code, generated := false, false
		for i, l := range strings.Split(string(b), "\n") {
			trimmed := strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(trimmed, "```"):
				code = !code
				continue
			case strings.HasPrefix(trimmed, "<!-- BEGIN GENERATED"), strings.HasPrefix(trimmed, "<!-- goals:"):
				generated = true
				continue
			case strings.HasPrefix(trimmed, "<!-- END GENERATED"), strings.HasPrefix(trimmed, "<!-- end of goals"):
				generated = false
				continue
			}
			if code || generated {
				continue
			}
			fn(name, i+1, l)
		}
	}
}

// TestReadmeFrontPage: the README reads in five minutes: at most 600 words
// above "Building from source", and no measured figure but the comparison
// table's (generated).
func TestReadmeFrontPage(t *testing.T) {
	b, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	front, _, ok := strings.Cut(string(b), "\n## Building from source\n")
	if !ok {
		t.Fatal(`README.md has no "## Building from source" section`)
	}
	if n := len(strings.Fields(front)); n > 600 {
		t.Errorf("README.md has %d words above \"Building from source\", more than 600", n)
	}
	figure := regexp.MustCompile(`\b` + bareFigure)
	forEachDocLine(t, func(file string, line int, text string) {
		if file == "README.md" && line <= strings.Count(front, "\n")+1 {
			if m := figure.FindString(text); m != "" {
				t.Errorf("README.md:%d: %q: a figure outside the comparison table", line, m)
			}
		}
	})
}

// TestNoIssueNumbers: the docs tell what is, not the history of the work
// (that is git's and CHANGELOG.md's); another project's issues, cited as
// evidence (kube-vip's), are not ours.
func TestNoIssueNumbers(t *testing.T) {
	issue := regexp.MustCompile(`(?i)\bissues?\s#?\d+|\(#\d+\)`)
	forEachDocLine(t, func(file string, line int, text string) {
		if m := issue.FindString(text); m != "" && !strings.Contains(text, "github.com/") && !strings.Contains(text, "kube-vip") {
			t.Errorf("%s:%d: %q: an issue number", file, line, m)
		}
	})
}
