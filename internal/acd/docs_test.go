package acd

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDocsStateTheWait: the operator docs state the longest wait for a
// member's resolution as ResolveGrace is.
func TestDocsStateTheWait(t *testing.T) {
	ms := ResolveGrace.Milliseconds()
	for file, want := range map[string]string{
		"../../docs/vrrp.md": fmt.Sprintf("at most %d ms after that member's first advertisement", ms),
		"../../CHANGELOG.md": fmt.Sprintf("for up to %d ms while a group member", ms),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if text := strings.Join(strings.Fields(string(b)), " "); !strings.Contains(text, want) {
			t.Errorf("%s does not say %q", file, want)
		}
	}
}
