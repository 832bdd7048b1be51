package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/docgen"
)

// comparison is the README's table: rows of bench/results.json, each
// against keepalived as the kubeadm HA guide (or its defaults) set it up.
var comparison = []struct{ row, what, evidence string }{
	{"real control plane, rolling restart of 3 apiservers (SIGTERM, shutdown delay 2 s), L2 defaults: failed requests",
		"rolling restart of 3 real apiservers, 2 s drain: failed requests", "docs/benchmarks.md"},
	{"kubeadm, certs renew + restart of the holder's apiserver (no shutdown delay), L2 defaults: failed requests",
		"kubeadm: the holder's apiserver restarted (certs renew): failed requests", "docs/benchmarks.md#kubeadm"},
	{"real control plane, holder's apiserver SIGKILLed, L2 defaults: client outage",
		"the holder's apiserver SIGKILLed (real apiservers, no kubelet): outage", "docs/benchmarks.md#r-real-sigkill"},
	{"L2, holder's link cut, advert 100 ms: client-seen outage",
		"the holder's link cut (100 ms adverts, not the default): outage", "docs/vrrp.md#failover-figures"},
	{"idle RSS, one VIP held, L2",
		"memory of an idle holder", "docs/benchmarks.md#idle-cost"},
}

// TestReadmeComparison: the README's comparison is bench/results.json's
// figures (go test ./test/tools/benchtable -update rewrites it).
func TestReadmeComparison(t *testing.T) {
	rows, err := readRows("../../../bench/results.json")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]row{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	var b strings.Builder
	b.WriteString("| median of the bench's trials | novaedge-cpvip | keepalived (kubeadm HA guide) | evidence |\n|---|---|---|---|\n")
	for _, c := range comparison {
		r, ok := byName[c.row]
		if !ok {
			t.Fatalf("bench/results.json has no row %q", c.row)
		}
		theirs := "—"
		for _, o := range r.Others {
			if strings.HasPrefix(o.Tool, "keepalived") {
				theirs = short(o.Median, r.Unit)
				break
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | [%s](%s) |\n", c.what, short(r.Ours.Median, r.Unit), theirs, strings.TrimPrefix(strings.Split(c.evidence, "#")[0], "docs/"), c.evidence)
	}
	if err := docgen.Check("../../../README.md", "<!-- BEGIN GENERATED: comparison -->\n", "<!-- END GENERATED: comparison -->\n", b.String(), *update,
		"go test ./test/tools/benchtable -update"); err != nil {
		t.Fatal(err)
	}
}

// short is num, with counts as whole numbers and times past a second in
// seconds.
func short(v float64, unit string) string {
	switch {
	case unit == "requests":
		return fmt.Sprintf("%.0f", v)
	case unit == "ms" && v >= 1000:
		return fmt.Sprintf("%.1f s", v/1000)
	}
	return num(v, unit)
}
