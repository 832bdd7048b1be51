// Package manifests holds the static pod manifests that `novaedge-cpvip
// manifest pod` writes and the monitoring files (monitoring/): the alert
// rules, their PrometheusRule, the PodMonitor, the scrape job and the
// dashboard. Its tests parse and render them again so they cannot rot or
// drift from their generators.
package manifests

import (
	_ "embed"

	"sigs.k8s.io/yaml"
)

// RulesFile is the alert rules file, relative to this directory.
const RulesFile = "monitoring/novaedge-cpvip.rules.yaml"

//go:embed monitoring/novaedge-cpvip.rules.yaml
var rulesYAML []byte

// AlertRule is one rule of the rules file.
type AlertRule struct {
	Alert, Expr, For string
}

// AlertRules parses the alert rules file.
func AlertRules() ([]AlertRule, error) {
	var rf struct {
		Groups []struct{ Rules []AlertRule }
	}
	if err := yaml.Unmarshal(rulesYAML, &rf); err != nil {
		return nil, err
	}
	var out []AlertRule
	for _, g := range rf.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// AlertFor returns each alert's for: ("" when it has none).
func AlertFor() (map[string]string, error) {
	rs, err := AlertRules()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range rs {
		out[r.Alert] = r.For
	}
	return out, nil
}
