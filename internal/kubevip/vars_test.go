package kubevip

import (
	"flag"
	"testing"

	"github.com/novaedge/cpvip/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated table in docs/migrate-from-kube-vip.md")

const (
	tableBegin = "<!-- BEGIN GENERATED: go test ./internal/kubevip -run TestMigrationDoc -update -->\n"
	tableEnd   = "<!-- END GENERATED -->\n"
)

// TestMigrationDoc fails when the mapping table in the migration guide
// drifts from the converter's table.
func TestMigrationDoc(t *testing.T) {
	if err := docgen.Check("../../docs/migrate-from-kube-vip.md", tableBegin, tableEnd, Table(), *update,
		"go test ./internal/kubevip -run TestMigrationDoc -update"); err != nil {
		t.Error(err)
	}
}
