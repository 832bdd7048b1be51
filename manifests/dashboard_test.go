package manifests

import "strconv"

// The Grafana dashboard (monitoring/dashboard.json, Grafana 10+) is
// generated from dashboardPanels: one screen, who holds the VIP over time
// first. TestDashboard keeps the file in step; TestQueriesParse has
// promtool parse every query; TestQueriesNameExportedMetrics checks the
// names against what the daemon exports.

type query struct {
	Expr, Legend string
	Table        bool // an instant query shown as a table
}

type panel struct {
	ID       int
	Title    string
	Type     string // timeseries, state-timeline, table
	W, H     int
	Unit     string
	Mappings []string // value i shows as Mappings[i] (state timelines)
	Queries  []query
	Help     string
}

// sel is the instance selector of the dashboard's variable.
const sel = `instance=~"$instance"`

func dashboardPanels() []panel {
	ps := []panel{
		{Title: "Who holds the VIP", Type: "state-timeline", W: 24, H: 7, Mappings: []string{"not held", "held"},
			Help:    "L2: one node holds it; BGP: every healthy node announces it.",
			Queries: []query{{`max by (instance, vip) (novaedge_cpvip_vip_held{` + sel + `})`, "{{instance}} {{vip}}", false}}},
		{Title: "Apiserver health", Type: "state-timeline", W: 12, H: 7, Mappings: []string{"unknown", "healthy", "unhealthy", "draining"},
			Help: "The local kube-apiserver as each node's checks judge it.",
			Queries: []query{{`max by (instance) (novaedge_cpvip_health_state{state="healthy", ` + sel + `})` +
				` + 2 * max by (instance) (novaedge_cpvip_health_state{state="unhealthy", ` + sel + `})` +
				` + 3 * max by (instance) (novaedge_cpvip_health_state{state="draining", ` + sel + `})`, "{{instance}}", false}}},
		{Title: "VRRP state", Type: "state-timeline", W: 12, H: 7, Mappings: []string{"initialize", "backup", "master", "fault"},
			Help:    "L2 mode.",
			Queries: []query{{`max by (instance, vip) (novaedge_cpvip_vrrp_state{` + sel + `})`, "{{instance}} {{vip}}", false}}},
		{Title: "Transitions", Type: "timeseries", W: 12, H: 7,
			Help:    "Role changes per interval: held, released, healthy, unhealthy.",
			Queries: []query{{`sum by (instance, to) (increase(novaedge_cpvip_transitions_total{` + sel + `}[$__rate_interval]))`, "{{instance}} {{to}}", false}}},
		{Title: "Fail open and address conflicts", Type: "timeseries", W: 12, H: 7,
			Help: "Fail open: the VIP kept although no apiserver passes its checks. Conflict: another host answers for the VIP.",
			Queries: []query{{`max by (instance) (novaedge_cpvip_fail_open{` + sel + `})`, "{{instance}} fail open", false},
				{`max by (instance, vip) (novaedge_cpvip_address_conflict{` + sel + `})`, "{{instance}} conflict {{vip}}", false}}},
		{Title: "Advertised priority", Type: "timeseries", W: 12, H: 7,
			Help:    "PRIORITY while healthy, 1 in fail open, 0 when not a candidate (L2).",
			Queries: []query{{`max by (instance) (novaedge_cpvip_vrrp_priority{` + sel + `})`, "{{instance}}", false}}},
		{Title: "Health checks", Type: "timeseries", W: 12, H: 7, Unit: "s",
			Help: "95th percentile of the check's duration, and failed checks per second.",
			Queries: []query{{`histogram_quantile(0.95, sum by (instance, le) (rate(novaedge_cpvip_health_check_duration_seconds_bucket{` + sel + `}[$__rate_interval])))`, "{{instance}} p95", false},
				{`sum by (instance) (rate(novaedge_cpvip_health_checks_total{result="failure", ` + sel + `}[$__rate_interval]))`, "{{instance}} failures/s", false}}},
		{Title: "VRRP advertisements", Type: "timeseries", W: 12, H: 7,
			Help: "Sent and received per second (one election for all VIPs); dropped by reason.",
			Queries: []query{{`max by (instance) (rate(novaedge_cpvip_vrrp_adverts_sent_total{` + sel + `}[$__rate_interval]))`, "{{instance}} sent", false},
				{`max by (instance) (rate(novaedge_cpvip_vrrp_adverts_received_total{` + sel + `}[$__rate_interval]))`, "{{instance}} received", false},
				{`sum by (instance, proto, reason) (rate(novaedge_cpvip_packets_dropped_total{` + sel + `}[$__rate_interval]))`, "{{instance}} dropped {{proto}} {{reason}}", false}}},
		{Title: "BGP and BFD sessions", Type: "state-timeline", W: 12, H: 7, Mappings: []string{"down", "up"},
			Help: "BGP mode.",
			Queries: []query{{`max by (instance, peer) (novaedge_cpvip_bgp_peer_up{` + sel + `})`, "{{instance}} BGP {{peer}}", false},
				{`max by (instance, peer) (novaedge_cpvip_bfd_session_up{` + sel + `})`, "{{instance}} BFD {{peer}}", false}}},
		{Title: "Failures to send, VIP repaired", Type: "timeseries", W: 12, H: 7,
			Help: "Sends that failed (vrrp, garp, bgp_route), and the VIP bound again after someone removed it (fixed) or not bound (failed).",
			Queries: []query{{`sum by (instance, kind) (increase(novaedge_cpvip_send_failures_total{` + sel + `}[$__rate_interval]))`, "{{instance}} {{kind}} failed", false},
				{`sum by (instance, action) (increase(novaedge_cpvip_reconcile_actions_total{action=~"fixed|failed", ` + sel + `}[$__rate_interval]))`, "{{instance}} VIP {{action}}", false}}},
		{Title: "Spreading: connections per backend", Type: "timeseries", W: 12, H: 7,
			Help: "With SPREAD on: the connections the holder's proxy carries to each apiserver, and whether each is up.",
			Queries: []query{{`sum by (instance, backend) (novaedge_cpvip_spread_active_connections{` + sel + `})`, "{{instance}} to {{backend}}", false},
				{`max by (instance, backend) (novaedge_cpvip_spread_backend_up{` + sel + `})`, "{{instance}} {{backend}} up", false}}},
		{Title: "Versions", Type: "table", W: 24, H: 5,
			Queries: []query{{`max by (instance, version, goversion, mode) (novaedge_cpvip_build_info{` + sel + `})`, "", true}}},
	}
	for i := range ps {
		ps[i].ID = i + 1
	}
	return ps
}

type obj = map[string]any

// datasource is the dashboard's data source variable, as a panel names it.
func datasource() obj { return obj{"type": "prometheus", "uid": "${datasource}"} }

// dashboard is the Grafana dashboard model of dashboardPanels, laid out
// left to right, top to bottom on Grafana's 24-column grid.
func dashboard() obj {
	var panels []any
	x, y, rowH := 0, 0, 0
	for _, p := range dashboardPanels() {
		if x+p.W > 24 {
			x, y, rowH = 0, y+rowH, 0
		}
		var targets []any
		for i, q := range p.Queries {
			t := obj{"refId": string(rune('A' + i)), "datasource": datasource(), "expr": q.Expr, "legendFormat": q.Legend}
			if q.Table {
				t["instant"], t["range"], t["format"] = true, false, "table"
			}
			targets = append(targets, t)
		}
		defaults := obj{}
		if p.Unit != "" {
			defaults["unit"] = p.Unit
		}
		if len(p.Mappings) > 0 {
			m := obj{}
			for i, text := range p.Mappings {
				m[strconv.Itoa(i)] = obj{"text": text, "index": i}
			}
			defaults["mappings"] = []any{obj{"type": "value", "options": m}}
		}
		panels = append(panels, obj{"id": p.ID, "type": p.Type, "title": p.Title, "description": p.Help, "datasource": datasource(),
			"gridPos": obj{"x": x, "y": y, "w": p.W, "h": p.H}, "targets": targets,
			"fieldConfig": obj{"defaults": defaults, "overrides": []any{}}})
		x += p.W
		rowH = max(rowH, p.H)
	}
	return obj{
		"title": "novaedge-cpvip", "uid": "novaedge-cpvip", "description": "The control-plane VIP: who holds it, each node's apiserver health, the election, BGP/BFD and spreading. Generated by go test ./manifests -update.",
		"tags": []string{"novaedge-cpvip", "kubernetes", "control-plane"}, "schemaVersion": 38, "version": 1, "editable": true,
		"time": obj{"from": "now-6h", "to": "now"}, "refresh": "30s", "graphTooltip": 1,
		"templating": obj{"list": []any{
			obj{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus"},
			obj{"name": "instance", "label": "Node", "type": "query", "datasource": datasource(), "refresh": 2, "includeAll": true, "multi": true,
				"definition": "label_values(novaedge_cpvip_build_info, instance)",
				"query":      obj{"query": "label_values(novaedge_cpvip_build_info, instance)", "refId": "instance"},
				"current":    obj{"selected": true, "text": "All", "value": "$__all"}},
		}},
		"panels": panels,
	}
}
