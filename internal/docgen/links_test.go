package docgen

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestLinks: every relative link in the README and docs/ names a file
// that exists and, with a #fragment, a heading of that file (GitHub's
// anchors). Offline: links with a scheme are not followed.
func TestLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "RELEASING.md"), filepath.Join(root, "CHANGELOG.md"))
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		anchors[path] = headings(string(b))
		return anchors[path]
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(stripCode(string(b)), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.Join(filepath.Dir(f), path)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link to %s: no such file", rel(f), i+1, target)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[frag] {
					t.Errorf("%s:%d: link to %s: %s has no heading #%s", rel(f), i+1, target, rel(dest), frag)
				}
			}
		}
	}
}

func rel(p string) string { return strings.TrimPrefix(filepath.ToSlash(p), "../../") }

// stripCode blanks fenced code blocks (their lines kept, so line numbers hold).
func stripCode(doc string) string {
	lines := strings.Split(doc, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// anchorID is an HTML anchor written in Markdown (<a id="r-…"></a>).
var anchorID = regexp.MustCompile(`<a id="([^"]+)"></a>`)

// headings returns a Markdown file's heading anchors as GitHub makes them:
// lower case, punctuation but hyphens and underscores dropped, spaces to
// hyphens, a repeated one suffixed -1, -2, …; and its HTML anchors.
func headings(doc string) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	for _, m := range anchorID.FindAllStringSubmatch(doc, -1) {
		out[m[1]] = true
	}
	for _, l := range strings.Split(stripCode(doc), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func TestHeadings(t *testing.T) {
	got := headings("# Title\n## What `status` says (L2, BGP)\n```\n# not a heading\n```\n## Title\n### Échec_1 — now\n")
	for _, want := range []string{"title", "what-status-says-l2-bgp", "title-1", "échec_1--now"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a code block made an anchor")
	}
}
