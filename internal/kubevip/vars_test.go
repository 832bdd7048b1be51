package kubevip

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated table in docs/migrate-from-kube-vip.md")

const (
	tableBegin = "<!-- BEGIN GENERATED: go test ./internal/kubevip -run TestMigrationDoc -update -->\n"
	tableEnd   = "<!-- END GENERATED -->\n"
)

// TestMigrationDoc fails when the mapping table in the migration guide
// drifts from the converter's table.
func TestMigrationDoc(t *testing.T) {
	const path = "../../docs/migrate-from-kube-vip.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), tableBegin)
	_, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the generated-section markers", path)
	}
	want := before + tableBegin + Table() + tableEnd + after
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(doc) != want {
		t.Errorf("%s is out of date with internal/kubevip: run go test ./internal/kubevip -run TestMigrationDoc -update", path)
	}
}
