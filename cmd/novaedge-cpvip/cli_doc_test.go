package main

import (
	"bytes"
	"flag"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/docgen"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated sections of the docs")

// ownFlags returns a command's help with the configuration's flags left
// out (docs/configuration.md lists those): the flags of the command itself.
func ownFlags(help string) string {
	config := map[string]bool{"env-file": true}
	for _, f := range configFields() {
		config[f] = true
	}
	var out []string
	keep := false
	name := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	for _, l := range strings.Split(help, "\n") {
		if m := name.FindStringSubmatch(l); m != nil {
			keep = !config[m[1]]
		}
		if keep && strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func configFields() []string {
	var out []string
	for _, f := range config.Fields() {
		if f.Flag != "" {
			out = append(out, f.Flag)
		}
	}
	return out
}

// TestCLIReference keeps docs/cli.md in step with the commands' help
// (go test ./cmd/novaedge-cpvip -run TestCLIReference -update).
func TestCLIReference(t *testing.T) {
	help := func(args ...string) string {
		var out, errOut bytes.Buffer
		if code := dispatch(args, &out, &errOut); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		return out.String() + errOut.String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "```\n%s```\n\n", help("help"))
	fmt.Fprintf(&b, "### `novaedge-cpvip status`\n\n```\n%s```\n\n", help("status", "-h"))
	fmt.Fprintf(&b, "### `novaedge-cpvip manifest pod`\n\nThe configuration's flags, and these:\n\n```\n%s\n```\n\n", ownFlags(help("manifest", "pod", "-h")))
	fmt.Fprintf(&b, "### `novaedge-cpvip migrate`\n\n```\n%s```\n\n", help("migrate", "-h"))
	fmt.Fprintf(&b, "### Exit codes\n\n| code | meaning |\n|---|---|\n| %d | done; the daemon stopped on a signal after releasing everything |\n| %d | it could not do it: the daemon cannot start, `status` cannot reach it, a file cannot be read |\n| %d | the configuration or the command line is invalid (the message names what) |\n",
		exitOK, exitFail, exitConfig)
	if err := docgen.Check(filepath.Join("..", "..", "docs", "cli.md"), "<!-- BEGIN GENERATED: cli -->\n", "<!-- END GENERATED: cli -->\n",
		b.String(), *updateDocs, "go test ./cmd/novaedge-cpvip -run TestCLIReference -update"); err != nil {
		t.Fatal(err)
	}
}
