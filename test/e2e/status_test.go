package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

func TestStatusAndMetrics(t *testing.T) {
	l := newL2Lab(t)
	// Before the daemon runs: a clear error, exit 1.
	out, err := l.node.Exec(binary, "status")
	if err == nil || !strings.Contains(err.Error(), "is novaedge-cpvip running") {
		t.Errorf("status without a daemon: %q %v", out, err)
	}
	const token = "status-test-token-9c1e"
	p := l.start(t, "NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450", "NOVAEDGE_CP_VIP_SA_TOKEN_PATH="+l.tokenPath)
	l.waitVIP(t, vip4, true, 10*time.Second)
	l.waitVIP(t, vip6, true, 10*time.Second)
	waitLine(t, p, 0, "Serving metrics and status", "addr=127.0.0.1:9450")

	table, err := l.node.Exec(binary, "status")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("novaedge-cpvip status:\n%s", table)
	for _, want := range []string{"mode l2", "healthy", "192.0.2.100/32", "2001:db8::100/128", "master", "yes"} {
		if !strings.Contains(table, want) {
			t.Errorf("status table lacks %q", want)
		}
	}
	js, err := l.node.Exec(binary, "status", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Mode  string `json:"mode"`
		Ready bool   `json:"ready"`
		VIPs  []struct {
			Address string `json:"address"`
			Held    bool   `json:"held"`
		} `json:"vips"`
		VRRP []struct {
			State string `json:"state"`
		} `json:"vrrp"`
		Transitions []struct {
			To string `json:"to"`
		} `json:"transitions"`
	}
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, js)
	}
	if s.Mode != "l2" || !s.Ready || len(s.VIPs) != 2 || !s.VIPs[0].Held || len(s.VRRP) != 2 || s.VRRP[0].State != "master" || len(s.Transitions) == 0 {
		t.Errorf("status JSON %+v", s)
	}

	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
		if code, _, err := l.node.HTTPGet("http://127.0.0.1:9450" + path); err != nil || code != want {
			t.Errorf("%s: %d %v", path, code, err)
		}
	}
	code, metrics, err := l.node.HTTPGet("http://127.0.0.1:9450/metrics")
	if err != nil || code != 200 {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	for _, want := range []string{
		`novaedge_cpvip_vip_held{vip="192.0.2.100/32"} 1`, `novaedge_cpvip_fail_open 0`,
		`novaedge_cpvip_vrrp_state{vip="192.0.2.100/32"} 2`,
		`novaedge_cpvip_health_checks_total{result="success"}`,
		`novaedge_cpvip_health_check_duration_seconds_bucket`,
		`novaedge_cpvip_transitions_total{to="held"} 2`, // one per VIP: re-announcements are not transitions
		`novaedge_cpvip_send_failures_total{kind="garp"} 0`, `novaedge_cpvip_send_failures_total{kind="vrrp"} 0`,
		`novaedge_cpvip_reconcile_actions_total{action="installed"} 2`,
		`novaedge_cpvip_packets_dropped_total{proto="vrrp",reason="checksum"} 0`,
		`novaedge_cpvip_health_state{state="healthy"} 1`, `novaedge_cpvip_health_state{state="unhealthy"} 0`,
		`novaedge_cpvip_health_settled 1`, `novaedge_cpvip_vrrp_priority{vip="192.0.2.100/32"} 100`,
		`novaedge_cpvip_vrrp_adverts_sent_total{vip="192.0.2.100/32"}`, `novaedge_cpvip_vrrp_adverts_received_total{vip="192.0.2.100/32"} 0`,
		`novaedge_cpvip_build_info{goversion="go`, `mode="l2"`, `novaedge_cpvip_last_transition_timestamp_seconds 1.`,
		`novaedge_cpvip_config_reloads_total{result="ok"} 0`,
		`go_goroutines`, `process_resident_memory_bytes`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Unhealthy, and no other node: the VIP stays (fail open), the metric
	// says so and the transition is counted.
	if err := l.api.Set(lab.ServerError); err != nil {
		t.Fatal(err)
	}
	err = lab.Eventually(10*time.Second, func() error {
		_, metrics, _ = l.node.HTTPGet("http://127.0.0.1:9450/metrics")
		for _, want := range []string{`novaedge_cpvip_fail_open 1`, `novaedge_cpvip_vip_held{vip="192.0.2.100/32"} 1`, `novaedge_cpvip_transitions_total{to="unhealthy"} 1`,
			`novaedge_cpvip_health_state{state="unhealthy"} 1`, `novaedge_cpvip_health_settled 0`, `novaedge_cpvip_vrrp_priority{vip="192.0.2.100/32"} 1`} {
			if !strings.Contains(metrics, want) {
				return fmt.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "novaedge_cpvip_vip_held", "transitions_total", "fail_open"))
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("after the apiserver failed: %v", err)
	}
	if strings.Contains(js+table+metrics, token) {
		t.Error("the token appears in status or metrics")
	}
}

func grepLines(s string, parts ...string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, p := range parts {
			if strings.Contains(line, p) {
				out = append(out, line)
			}
		}
	}
	return strings.Join(out, "\n")
}
