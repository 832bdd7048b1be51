package docgen

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// logLine is one message the daemon logs.
type logLine struct {
	msg, level, pkg string
}

// logLines finds every slog call with a constant message in the daemon's
// code (cmd/ and internal/, not tests, not the simulation): x.Debug,
// x.Info, x.Warn, x.Error with a string literal first, and x.Log(ctx,
// level, literal).
func logLines(t *testing.T, root string) []logLine {
	t.Helper()
	var out []logLine
	fset := token.NewFileSet()
	for _, dir := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "sim" || d.Name() == "testdata" || d.Name() == "docgen") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			pkg, _ := filepath.Rel(root, filepath.Dir(path))
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				arg, level := 0, strings.ToLower(sel.Sel.Name)
				switch sel.Sel.Name {
				case "Debug", "Info", "Warn", "Error":
				case "Log":
					arg, level = 2, "warn or debug"
				default:
					return true
				}
				if len(call.Args) <= arg {
					return true
				}
				lit, ok := call.Args[arg].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				msg, err := strconv.Unquote(lit.Value)
				if err != nil || msg == "" || !unicodeUpper(msg) {
					return true
				}
				out = append(out, logLine{msg: msg, level: level, pkg: filepath.ToSlash(pkg)})
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(out, func(a, b logLine) int { return strings.Compare(a.pkg+a.msg, b.pkg+b.msg) })
	return slices.CompactFunc(out, func(a, b logLine) bool { return a == b })
}

// unicodeUpper: our log messages are sentences; a lower-case literal in
// a Debug-named call is something else (a test helper's format).
func unicodeUpper(s string) bool { return s[0] >= 'A' && s[0] <= 'Z' }

// TestLogReference keeps docs/logs.md's list of the messages the daemon
// logs in step with the code (-update rewrites it).
func TestLogReference(t *testing.T) {
	lines := logLines(t, filepath.Join("..", ".."))
	if len(lines) < 100 {
		t.Fatalf("found %d log messages: the scan is broken", len(lines))
	}
	var b strings.Builder
	pkg := ""
	for _, l := range lines {
		if l.pkg != pkg {
			pkg = l.pkg
			fmt.Fprintf(&b, "\n**`%s`**\n\n| level | message |\n|---|---|\n", pkg)
		}
		fmt.Fprintf(&b, "| %s | `%s` |\n", l.level, strings.ReplaceAll(l.msg, "|", "\\|"))
	}
	if err := Check(filepath.Join("..", "..", "docs", "logs.md"), "<!-- BEGIN GENERATED: logs -->\n", "<!-- END GENERATED: logs -->\n",
		b.String()+"\n", *updateDocs, "go test ./internal/docgen -run TestLogReference -update"); err != nil {
		t.Fatal(err)
	}
}

var updateDocs = flag.Bool("update", false, "rewrite the generated sections of the docs")
