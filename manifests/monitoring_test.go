package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/docgen"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const (
	prometheusRuleFile = "monitoring/prometheusrule.yaml"
	dashboardFile      = "monitoring/dashboard.json"
	metricsDoc         = "../docs/metrics.md"
)

// writeOrCompare writes want to path with -update, else fails when the
// file differs.
func writeOrCompare(t *testing.T, path string, want []byte, how string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s: run go test ./manifests -update", path, how)
	}
}

// TestPrometheusRule: the PrometheusRule carries the rules file's groups
// unchanged (go test ./manifests -update rewrites it).
func TestPrometheusRule(t *testing.T) {
	b, err := os.ReadFile(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules map[string]any
	if err := yaml.UnmarshalStrict(b, &rules); err != nil {
		t.Fatalf("%s: %v", RulesFile, err)
	}
	pr := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata": map[string]any{"name": "novaedge-cpvip", "namespace": "kube-system",
			"labels": map[string]any{"app.kubernetes.io/name": "novaedge-cpvip"}},
		"spec": rules,
	}
	out, err := yaml.Marshal(pr)
	if err != nil {
		t.Fatal(err)
	}
	head := "# Generated from novaedge-cpvip.rules.yaml by go test ./manifests -update: edit that file.\n" +
		"# The alert rules for the Prometheus Operator (kubectl apply -f); docs/monitoring.md.\n"
	writeOrCompare(t, prometheusRuleFile, append([]byte(head), out...), RulesFile)
}

// exported reads the metric names the daemon exports from the generated
// reference (internal/status keeps it in step with the code).
func exported(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(novaedge_cpvip_[a-z0-9_]+)` \\| (\\w+) \\|").FindAllStringSubmatch(string(b), -1) {
		names = append(names, m[1])
		if m[2] == "histogram" {
			names = append(names, m[1]+"_bucket", m[1]+"_sum", m[1]+"_count")
		}
	}
	if len(names) < 20 {
		t.Fatalf("%s lists %d metrics: its table was not found", metricsDoc, len(names))
	}
	return names
}

// queries returns the rules' expressions and the dashboard's.
func queries(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	rs, err := AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		out["alert "+r.Alert] = r.Expr
	}
	for _, p := range dashboardPanels() {
		for i, q := range p.Queries {
			out[fmt.Sprintf("panel %q query %d", p.Title, i+1)] = q.Expr
		}
	}
	return out
}

// TestQueriesNameExportedMetrics: every novaedge_cpvip_ name in a rule or
// a panel is one the daemon exports.
func TestQueriesNameExportedMetrics(t *testing.T) {
	known := exported(t)
	used := map[string]bool{}
	for where, q := range queries(t) {
		for _, name := range regexp.MustCompile(`novaedge_cpvip_[a-z0-9_]+`).FindAllString(q, -1) {
			used[name] = true
			if !slices.Contains(known, name) {
				t.Errorf("%s names %s, which the daemon does not export (docs/metrics.md)", where, name)
			}
		}
	}
	for _, must := range []string{"novaedge_cpvip_vip_held", "novaedge_cpvip_fail_open", "novaedge_cpvip_address_conflict",
		"novaedge_cpvip_health_state", "novaedge_cpvip_transitions_total", "novaedge_cpvip_bgp_peer_up", "novaedge_cpvip_bfd_session_up",
		"novaedge_cpvip_spread_active_connections"} {
		if !used[must] {
			t.Errorf("no rule or panel uses %s", must)
		}
	}
}

// TestQueriesParse runs promtool on the rules file (check rules), its
// unit tests (test rules) and every panel's query (as recording rules):
// with NOVAEDGE_PROMTOOL set (make monitoring, test/tools/prometheus.sh).
func TestQueriesParse(t *testing.T) {
	promtool := os.Getenv("NOVAEDGE_PROMTOOL")
	if promtool == "" {
		t.Skip("NOVAEDGE_PROMTOOL not set: make monitoring runs this with Debian's promtool")
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "monitoring"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("check", "rules", filepath.Base(RulesFile))
	run("check", "config", "scrape-config.yaml")
	run("test", "rules", "alerts_test.yaml")
	var rec []map[string]string
	for _, p := range dashboardPanels() {
		for i, q := range p.Queries {
			rec = append(rec, map[string]string{"record": fmt.Sprintf("dashboard:panel%d:query%d", p.ID, i+1), "expr": expand(q.Expr)})
		}
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rec}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard.rules.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run("check", "rules", path)
}

// expand replaces the dashboard's variables as Grafana would.
func expand(q string) string {
	return strings.NewReplacer("$__rate_interval", "1m", "$instance", ".*", "$vip", ".*").Replace(q)
}

// TestDashboard: dashboard.json is what dashboardPanels describes (go
// test ./manifests -update rewrites it).
func TestDashboard(t *testing.T) {
	b, err := json.MarshalIndent(dashboard(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeOrCompare(t, dashboardFile, append(b, '\n'), "dashboardPanels in manifests/dashboard_test.go")
}

// TestPodMonitor: the PodMonitor selects the static pod by its labels and
// scrapes its named metrics port.
func TestPodMonitor(t *testing.T) {
	b, err := os.ReadFile("monitoring/podmonitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pm struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
		Spec     struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			}
			PodMetricsEndpoints []struct{ Port, Path string } `json:"podMetricsEndpoints"`
		}
	}
	if err := yaml.Unmarshal(b, &pm); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"kubeadm/novaedge-cpvip.yaml", "k3s/novaedge-cpvip.yaml"} {
		pb, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var pod corev1.Pod
		if err := yaml.Unmarshal(pb, &pod); err != nil {
			t.Fatal(err)
		}
		for k, v := range pm.Spec.Selector.MatchLabels {
			if pod.Labels[k] != v {
				t.Errorf("%s: the PodMonitor selects %s=%s, the pod has %q", path, k, v, pod.Labels[k])
			}
		}
		if pod.Namespace != pm.Metadata.Namespace {
			t.Errorf("%s: pod in %s, PodMonitor in %s", path, pod.Namespace, pm.Metadata.Namespace)
		}
		ports := pod.Spec.Containers[0].Ports
		if len(pm.Spec.PodMetricsEndpoints) != 1 || len(ports) != 1 || ports[0].Name != pm.Spec.PodMetricsEndpoints[0].Port {
			t.Errorf("%s: ports %+v, PodMonitor endpoints %+v", path, ports, pm.Spec.PodMetricsEndpoints)
		}
	}
	if job := pm.Metadata.Namespace + "/" + pm.Metadata.Name; !regexp.MustCompile(`^(.*/)?novaedge-cpvip$`).MatchString(job) {
		t.Errorf("the PodMonitor's job %s is not the one the rules expect", job)
	}
}

// TestAlertTable: docs/monitoring.md's fault -> alert table is
// monitoring/measured-*.json (written by the e2e TestAlertRules with
// NOVAEDGE_ALERTS_UPDATE=1), and each measured alert's for: is the rule's
// now (a changed for: needs measuring again).
func TestAlertTable(t *testing.T) {
	files := []string{"monitoring/measured-l2.json", "monitoring/measured-bgp.json"} // TestAlertRules', TestAlertRulesBGP's
	if more, _ := filepath.Glob("monitoring/measured-*.json"); len(more) != len(files) {
		t.Errorf("measured files %v, the table reads %v", more, files)
	}
	type row struct{ Fault, Alert, State, After, For string }
	var rows []row
	var dates []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Measured string
			Rows     []row
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rows = append(rows, m.Rows...)
		if !slices.Contains(dates, m.Measured) {
			dates = append(dates, m.Measured)
		}
	}
	forOf, err := AlertFor()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Measured %s by `TestAlertRules` and `TestAlertRulesBGP`.\n\n| fault in the lab | alert | seen | after the fault | fires |\n|---|---|---|---|---|\n", strings.Join(dates, ", "))
	for _, r := range rows {
		if r.Alert == "" {
			fmt.Fprintf(&sb, "| %s, watched %s | none | — | — | — |\n", r.Fault, r.After)
			continue
		}
		if f, ok := forOf[r.Alert]; !ok || f != r.For {
			t.Errorf("%s was measured with for: %q, the rule now says %q: run NOVAEDGE_ALERTS_UPDATE=1 go test -run TestAlertRules ./test/e2e", r.Alert, r.For, forOf[r.Alert])
		}
		fires := "then"
		if r.State == "pending" {
			fires = r.For + " later, if the fault lasts"
		}
		fmt.Fprintf(&sb, "| %s | `%s` | %s | %s | %s |\n", r.Fault, r.Alert, r.State, r.After, fires)
	}
	if err := docgen.Check(filepath.Join("..", "docs", "monitoring.md"), "<!-- BEGIN GENERATED: alerts -->\n", "<!-- END GENERATED: alerts -->\n",
		sb.String(), *update, "go test ./manifests -run TestAlertTable -update"); err != nil {
		t.Fatal(err)
	}
}
