package docgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	const begin, end = "<!-- B -->\n", "<!-- E -->\n"
	if err := os.WriteFile(path, []byte("intro\n"+begin+"old\n"+end+"outro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(path, begin, end, "new\n", false, "the update"); err == nil || !strings.Contains(err.Error(), "run the update") {
		t.Fatalf("stale section: %v", err)
	}
	if err := Check(path, begin, end, "new\n", true, ""); err != nil {
		t.Fatal(err)
	}
	if err := Check(path, begin, end, "new\n", false, ""); err != nil {
		t.Fatalf("after the update: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "intro\n"+begin+"new\n"+end+"outro\n" {
		t.Fatalf("rewritten as %q", b)
	}
	if err := Check(path, "<!-- X -->\n", end, "", false, ""); err == nil {
		t.Fatal("missing markers accepted")
	}
}
