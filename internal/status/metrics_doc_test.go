package status

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/novaedge/cpvip/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated sections of the docs")

// fullSnapshots are an L2 and a BGP node's snapshots with every part
// present, so that every metric the daemon can export has a series.
func fullSnapshots() []Snapshot {
	at := time.Unix(1_700_000_000, 0)
	common := func(mode string) Snapshot {
		return Snapshot{Version: "v1.0.0", Mode: mode, Health: Health{State: "healthy", Settled: true, Checks: map[string]uint64{"success": 1}},
			VIPs:      []VIP{{Address: "192.0.2.100/32", Held: true}},
			Reconcile: map[string]uint64{"installed": 1}, SendFailures: map[string]uint64{},
			Drops:       map[string]map[string]uint64{},
			Reloads:     map[string]uint64{"ok": 1},
			Transitions: []Transition{{At: at, To: "held", VIP: "192.0.2.100/32"}}}
	}
	l2 := common("l2")
	l2.VRRP = []VRRP{{VIP: "192.0.2.100/32", State: "master", Priority: 100, Sent: 1, Received: 1}}
	l2.Spread = []SpreadBackend{{Address: "192.0.2.11", Health: "up", Active: 1, Connections: 1}}
	l2.SpreadActive = true
	l2.Drops["vrrp"] = map[string]uint64{"other_group": 1}
	l2.SendFailures["vrrp"], l2.SendFailures["garp"] = 0, 0
	bgp := common("bgp")
	bgp.BGPPeers = []BGPPeer{{Address: "192.0.2.1", State: "established"}}
	bgp.BFD = []BFDSession{{Peer: "192.0.2.1", State: "up"}}
	bgp.Drops["bfd"] = map[string]uint64{"ttl": 1}
	bgp.SendFailures["bgp_route"] = 0
	return []Snapshot{l2, bgp}
}

// gathered returns every novaedge_cpvip metric family the full snapshots
// export, by name, with the modes that export it.
func gathered(t *testing.T) (map[string]*dto.MetricFamily, map[string][]string) {
	t.Helper()
	fams, modes := map[string]*dto.MetricFamily{}, map[string][]string{}
	for _, s := range fullSnapshots() {
		m := NewMetrics(func() Snapshot { return s }, NewJournal(time.Now))
		m.ObserveCheck(time.Millisecond)
		got, err := m.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range got {
			if strings.HasPrefix(f.GetName(), ns+"_") {
				fams[f.GetName()] = f
				modes[f.GetName()] = append(modes[f.GetName()], s.Mode)
			}
		}
	}
	return fams, modes
}

// TestEveryMetricExported: each metric described has a series in one of
// the full snapshots (the reference lists what Describe announces).
func TestEveryMetricExported(t *testing.T) {
	fams, _ := gathered(t)
	m := NewMetrics(func() Snapshot { return Snapshot{} }, NewJournal(time.Now))
	ch := make(chan *prometheus.Desc, 64)
	m.Describe(ch)
	close(ch)
	for d := range ch {
		name := descName(d)
		if fams[name] == nil {
			t.Errorf("%s is described but the full snapshots export no series of it", name)
		}
	}
}

// descName reads a Desc's fully-qualified name from its String.
func descName(d *prometheus.Desc) string {
	_, rest, _ := strings.Cut(d.String(), `fqName: "`)
	name, _, _ := strings.Cut(rest, `"`)
	return name
}

// TestMetricsReference keeps docs/metrics.md's table in step with what the
// daemon exports (-update rewrites it).
func TestMetricsReference(t *testing.T) {
	fams, modes := gathered(t)
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("| metric | type | labels | modes | meaning |\n|---|---|---|---|---|\n")
	for _, n := range names {
		f := fams[n]
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, "`"+l.GetName()+"`")
		}
		mode := "both"
		if len(modes[n]) == 1 {
			mode = modes[n][0]
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", n, strings.ToLower(f.GetType().String()), strings.Join(labels, ", "), mode,
			strings.ReplaceAll(f.GetHelp(), "|", "\\|"))
	}
	if err := docgen.Check("../../docs/metrics.md", "<!-- BEGIN GENERATED: metrics -->\n", "<!-- END GENERATED: metrics -->\n", b.String(), *update,
		"go test ./internal/status -run TestMetricsReference -update"); err != nil {
		t.Fatal(err)
	}
}
