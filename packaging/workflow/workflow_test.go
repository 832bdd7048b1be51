// Package workflow checks the release workflow's supply chain: what it
// runs is pinned and verified, and its secrets never reach a command line.
package workflow

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

const path = "../../.github/workflows/release.yml"

func read(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestActionsPinnedByCommit: every action is pinned by a full commit hash;
// a tag can be moved to other code.
func TestActionsPinnedByCommit(t *testing.T) {
	uses := regexp.MustCompile(`(?m)^\s*-?\s*uses:\s*(\S+)`).FindAllStringSubmatch(read(t), -1)
	if len(uses) == 0 {
		t.Fatal("no action found: the pattern no longer matches the workflow")
	}
	pinned := regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)
	for _, u := range uses {
		if !pinned.MatchString(u[1]) {
			t.Errorf("%s: not pinned by a commit hash", u[1])
		}
	}
}

// TestToolchainVerified: what the workflow downloads is checked against a
// SHA-256 written in it before it is used.
func TestToolchainVerified(t *testing.T) {
	w := read(t)
	for _, want := range []string{`sha256sum -c`, `GO_SHA256: `} {
		if !strings.Contains(w, want) {
			t.Errorf("the workflow lacks %q", want)
		}
	}
	if regexp.MustCompile(`curl[^\n]*\|\s*(tar|sh|bash)`).MatchString(w) {
		t.Error("the workflow pipes a download straight into tar or a shell, unverified")
	}
}

// TestSecretsNotOnCommandLines: a secret goes through the environment and
// stdin, never expanded into a script's text, where it lands on a command
// line (ps, /proc/PID/cmdline) and in the script file on the runner.
func TestSecretsNotOnCommandLines(t *testing.T) {
	for i, line := range strings.Split(read(t), "\n") {
		l := strings.TrimSpace(line)
		if strings.Contains(l, "${{ secrets.") && !regexp.MustCompile(`^[A-Z_]+:\s*\$\{\{ secrets\.\w+ \}\}$`).MatchString(l) {
			t.Errorf("line %d: a secret outside an env: value: %s", i+1, l)
		}
		if regexp.MustCompile(`\s-p\s|--password[ =]`).MatchString(l) {
			t.Errorf("line %d: a password given as an argument: %s", i+1, l)
		}
	}
}
