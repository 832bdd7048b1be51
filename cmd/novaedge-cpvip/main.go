// Command novaedge-cpvip gives a Kubernetes control plane one stable virtual
// IP for its kube-apiservers, without needing the Kubernetes API.
//
// GOMAXPROCS still follows the container's CPU limit at start; checking it
// again every second (Go 1.25's updatemaxprocs) was a wake-up a second of
// an otherwise idle daemon.
//
//go:debug updatemaxprocs=0
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/novaedge/cpvip/internal/config"
)

// version is stamped at build time: -ldflags "-X main.version=...".
var version = "dev"

// Exit codes.
const (
	exitOK     = 0 // done; the daemon stopped on a signal after releasing everything
	exitFail   = 1 // it could not do it: the daemon cannot start, status cannot reach it, a file cannot be read
	exitConfig = 2 // the configuration or the command line is invalid (the message names what)
)

const usage = `novaedge-cpvip: a control-plane VIP manager for Kubernetes.

Usage:
  novaedge-cpvip [run] [flags]        run the daemon (the default)
  novaedge-cpvip check-config [flags] validate the configuration and print it
  novaedge-cpvip status [-o json]     show the running daemon's state
  novaedge-cpvip manifest pod [flags] print the static pod (kubeadm, k3s) for the configuration
  novaedge-cpvip migrate kube-vip FILE  convert a kube-vip manifest to an env file
  novaedge-cpvip version              print the version

Configuration comes from NOVAEDGE_* environment variables, --env-file PATH and
flags; see docs/configuration.md or "novaedge-cpvip run --help".
`

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	cmd := "run"
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		cmd, args = "help", nil // the commands first; run --help lists the daemon's flags
	case len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-':
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return run(args, stderr)
	case "check-config":
		return checkConfig(args, stdout, stderr)
	case "status":
		return statusCmd(args, stdout, stderr)
	case "manifest":
		return manifest(args, stdout, stderr)
	case "migrate":
		return migrate(args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "novaedge-cpvip", version)
		return exitOK
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "novaedge-cpvip: unknown command %q\n\n%s", cmd, usage)
		return exitConfig
	}
}

// parseFlags parses the config flags of a subcommand, and the subcommand's
// own that extra defines (may be nil); -h prints its help.
func parseFlags(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*config.Flags, int) {
	fs := flag.NewFlagSet("novaedge-cpvip "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if extra != nil {
		extra(fs)
	}
	fl := config.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK
		}
		return nil, exitConfig
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "novaedge-cpvip %s: unexpected argument %q\n", name, fs.Arg(0))
		return nil, exitConfig
	}
	return fl, -1
}
