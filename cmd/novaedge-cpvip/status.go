package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/status"
)

// PackageEnvFile is the systemd package's env file: status reads the
// metrics address from it when it is there and readable and no other is
// named.
const PackageEnvFile = "/etc/novaedge/cpvip.env"

// statusCmd prints the running daemon's /status as a table, or as JSON.
func statusCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("novaedge-cpvip status", flag.ContinueOnError)
	fset.SetOutput(stderr)
	addr := fset.String("metrics-addr", "", "address of the daemon's status endpoint (default: NOVAEDGE_CP_VIP_METRICS_ADDR from the environment, else from --env-file, else "+
		config.Default("NOVAEDGE_CP_VIP_METRICS_ADDR")+")")
	envFile := fset.String("env-file", "", "the daemon's env file, to read NOVAEDGE_CP_VIP_METRICS_ADDR from (default "+PackageEnvFile+" when it is there and readable)")
	out := fset.String("o", "table", "output: table or json")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitConfig
	}
	if *out != "table" && *out != "json" {
		fmt.Fprintf(stderr, "novaedge-cpvip status: -o must be table or json, not %q\n", *out)
		return exitConfig
	}
	target, note, err := statusAddr(*addr, *envFile)
	if note != "" {
		fmt.Fprintf(stderr, "novaedge-cpvip status: %s\n", note)
	}
	if err != nil {
		fmt.Fprintf(stderr, "novaedge-cpvip status: %v\n", err)
		return exitConfig
	}
	*addr = target
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + *addr + "/status")
	if err != nil {
		fmt.Fprintf(stderr, "novaedge-cpvip status: cannot reach the daemon at %s: is novaedge-cpvip running, with NOVAEDGE_CP_VIP_METRICS_ADDR=%s? (%v)\n", *addr, *addr, rootCause(err))
		return exitFail
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "novaedge-cpvip status: %s answered %s %v\n", *addr, resp.Status, err)
		return exitFail
	}
	if *out == "json" {
		_, _ = stdout.Write(body)
		return exitOK
	}
	var s status.Snapshot
	if err := json.Unmarshal(body, &s); err != nil {
		fmt.Fprintf(stderr, "novaedge-cpvip status: %s did not answer with a status: %v\n", *addr, err)
		return exitFail
	}
	printStatus(stdout, &s)
	return exitOK
}

// statusAddr is where the daemon's /status is, in the daemon's own
// precedence: the flag, the environment, the env file (envFile, else
// PackageEnvFile if it is there), the default; a listener on every address
// (the static pod's ":9450") is reached on 127.0.0.1 (config.LocalReach).
// note, when not empty, says why the package's file was not read.
func statusAddr(flagAddr, envFile string) (addr, note string, err error) {
	const name = "NOVAEDGE_CP_VIP_METRICS_ADDR"
	addr, set := flagAddr, flagAddr != ""
	if !set {
		addr, set = os.LookupEnv(name)
	}
	if !set {
		path, named := envFile, envFile != ""
		if !named {
			path = PackageEnvFile
		}
		f, oerr := os.Open(path)
		switch {
		case oerr != nil && named:
			return "", "", fmt.Errorf("reading --env-file: %w", oerr)
		case oerr != nil && !errors.Is(oerr, fs.ErrNotExist):
			note = fmt.Sprintf("cannot read %s (%v): its %s, if set, is not used; run as root or pass --metrics-addr", path, rootCause(oerr), name)
		case oerr == nil:
			vars, perr := config.ParseEnvFile(f)
			f.Close()
			if perr != nil {
				return "", "", fmt.Errorf("env file %s: %w", path, perr)
			}
			addr, set = vars[name]
		}
	}
	if !set {
		addr = config.Default(name)
	}
	if addr == "" {
		return "", note, fmt.Errorf("%s is empty: the daemon serves no status", name)
	}
	reach, _, err := config.LocalReach(addr)
	if err != nil {
		return "", note, fmt.Errorf("%s %w", name, err)
	}
	return reach, note, nil
}

func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

func printStatus(w io.Writer, s *status.Snapshot) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	defer tw.Flush()
	up := time.Since(s.Started).Round(time.Second)
	fmt.Fprintf(tw, "novaedge-cpvip %s\tmode %s\tinterface %s\tup %s\tready %v\n", s.Version, s.Mode, s.Interface, up, s.Ready)
	fmt.Fprintf(tw, "apiserver\t%s\t%s\tchecks ok %d / failed %d\t%s\n", s.Health.State, s.Health.URL,
		s.Health.Checks["success"], s.Health.Checks["failure"], s.Health.LastReason)
	if s.FailOpen.InForce {
		what := "no node is healthy, so this one keeps the VIP"
		if s.Mode == "bgp" {
			what = "its route is announced demoted: routers use it only while no node is healthy"
		}
		fmt.Fprintf(tw, "fail open\tIN FORCE: %s\tits own check: %s\n", what, s.FailOpen.Reason)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "VIP\tHELD")
	for _, v := range s.VIPs {
		fmt.Fprintf(tw, "%s\t%s\n", v.Address, yesNo(v.Held))
	}
	for _, v := range s.VIPs {
		if v.Conflict != nil {
			fmt.Fprintf(tw, "address conflict\t%s\tanswered by %s since %s: not bound here until that host stops\n",
				v.Address, v.Conflict.MAC, ago(v.Conflict.Since))
		}
	}
	if len(s.VRRP) > 0 {
		fmt.Fprintln(tw, "\nVRRP\tSTATE\tMASTER\tSENT\tRECEIVED\tSINCE\tREASON")
		for _, v := range s.VRRP {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", v.VIP, v.State, v.Master, v.Sent, v.Received, ago(v.Since), v.Reason)
		}
		for _, v := range s.VRRP {
			for _, g := range v.OtherGroups {
				fmt.Fprintf(tw, "other group on our VRID\t%s\tignored: give each group its own VRID on the segment\n", g)
			}
		}
	}
	if len(s.BGPPeers) > 0 {
		fmt.Fprintln(tw, "\nBGP PEER\tAS\tSTATE\tSINCE\tREASON")
		for _, p := range s.BGPPeers {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", p.Address, p.AS, p.State, ago(p.Since), p.Reason)
		}
	}
	if len(s.BFD) > 0 {
		fmt.Fprintln(tw, "\nBFD PEER\tSTATE\tTX\tRX\tDIAG\tREMOTE DIAG\tSINCE")
		for _, b := range s.BFD {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Peer, b.State, b.TxInterval, b.RxInterval, b.Diag, b.RemoteDiag, ago(b.Since))
		}
	}
	if len(s.Spread) > 0 {
		fmt.Fprintf(tw, "\nSPREAD BACKEND (spreading %s)\tHEALTH\tACTIVE\tCONNECTIONS\tDIAL FAILURES\n",
			map[bool]string{true: "on", false: "off: see the log"}[s.SpreadActive])
		for _, b := range s.Spread {
			addr, h := b.Address, b.Health
			if b.Local {
				addr += " (this node)"
			}
			if b.DialFailed {
				h += ", last dial failed"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", addr, h, b.Active, b.Connections, b.DialFailures)
		}
	}
	if n := len(s.Transitions); n > 0 {
		fmt.Fprintln(tw, "\nLAST TRANSITIONS\t\t\t")
		for _, t := range s.Transitions[max(0, n-5):] {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.At.Format(time.TimeOnly), t.To, t.VIP, t.Reason)
		}
	}
	var drops []string
	for proto, rs := range s.Drops {
		for r, n := range rs {
			if n > 0 {
				drops = append(drops, fmt.Sprintf("%s/%s=%d", proto, r, n))
			}
		}
	}
	if len(drops) > 0 {
		fmt.Fprintf(tw, "\ndropped packets\t%s\n", strings.Join(drops, " "))
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}
