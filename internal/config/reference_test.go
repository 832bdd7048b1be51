package config

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated parts of docs/configuration.md")

const (
	refBegin = "<!-- BEGIN GENERATED: go test ./internal/config -run TestReferenceDoc -update -->\n"
	refEnd   = "<!-- END GENERATED -->\n"
)

// TestReferenceDoc fails when docs/configuration.md drifts from the Config struct.
func TestReferenceDoc(t *testing.T) {
	if err := docgen.Check("../../docs/configuration.md", refBegin, refEnd, Reference(), *update,
		"go test ./internal/config -run TestReferenceDoc -update"); err != nil {
		t.Error(err)
	}
}

// TestEnvTemplateLoads checks that the shipped env file template parses and
// names only known variables.
func TestEnvTemplateLoads(t *testing.T) {
	tmpl := EnvTemplate()
	vars, err := ParseEnvFile(strings.NewReader(tmpl))
	if err != nil || len(vars) != 0 {
		t.Fatalf("template: %v, %d active variables (all must be commented)", err, len(vars))
	}
	uncommented := strings.NewReplacer("\n#NOVAEDGE", "\nNOVAEDGE").Replace(tmpl)
	vars, err = ParseEnvFile(strings.NewReader(uncommented))
	if err != nil || len(vars) != len(Fields()) {
		t.Fatalf("uncommented template: %v, %d variables, want %d", err, len(vars), len(Fields()))
	}
}

// TestPackagedEnvFile fails when packaging/cpvip.env drifts from the Config struct.
func TestPackagedEnvFile(t *testing.T) {
	const path = "../../packaging/cpvip.env"
	if *update {
		if err := os.WriteFile(path, []byte(EnvTemplate()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != EnvTemplate() {
		t.Errorf("%s is out of date with internal/config (%v): run go test ./internal/config -run TestPackagedEnvFile -update", path, err)
	}
}
