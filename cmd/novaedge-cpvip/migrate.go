package main

import (
	"fmt"
	"io"
	"os"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/kubevip"
)

const migrateUsage = `Usage: novaedge-cpvip migrate kube-vip FILE

Reads a kube-vip (>= 0.6) static pod or DaemonSet manifest and prints an env
file for novaedge-cpvip on stdout; says on stderr what it dropped and why,
which kube-vip features you lose and what you gain, and the node-by-node
migration steps that fit the manifest.
`

func migrate(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, migrateUsage)
		return exitOK
	}
	if len(args) != 2 || args[0] != "kube-vip" {
		fmt.Fprint(stderr, migrateUsage)
		return exitConfig
	}
	data, err := os.ReadFile(args[1])
	if err != nil {
		fmt.Fprintf(stderr, "novaedge-cpvip migrate: %v\n", err)
		return exitFail
	}
	r, err := kubevip.Convert(data)
	if err != nil {
		fmt.Fprintf(stderr, "novaedge-cpvip migrate: %s: %v\n", args[1], err)
		return exitFail
	}
	if _, err := config.LoadMap(r.Vars); err != nil {
		fmt.Fprintf(stderr, "novaedge-cpvip migrate: %s converts to an invalid configuration: %v\n", args[1], err)
		return exitFail
	}
	_, _ = stdout.Write(r.EnvFile(args[1]))
	fmt.Fprintf(stderr, "converted %s\n", r.Source)
	for _, d := range r.Dropped {
		fmt.Fprintf(stderr, "dropped: %s\n", d)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	fmt.Fprint(stderr, r.Explanation())
	return exitOK
}
