package lab

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Prometheus is a real Prometheus server (Debian's, test/tools/prometheus.sh)
// on a lab host, scraping targets every second and evaluating rule files
// every second.
type Prometheus struct {
	host *Host
	proc *Process
	url  string
}

// Alert is one active alert as Prometheus's /api/v1/alerts shows it.
type Alert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"` // pending or firing
	ActiveAt time.Time         `json:"activeAt"`
	Value    string            `json:"value"`
}

// Name is the alert's name.
func (a Alert) Name() string { return a.Labels["alertname"] }

// StartPrometheus runs bin on h, its data in dir, scraping targets
// (host:port) as the job "job" and evaluating rules (a rules file's path).
// It returns once the server is ready.
func (h *Host) StartPrometheus(bin, dir, job string, targets []string, rules string) (*Prometheus, error) {
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\nrule_files:\n  - %q\nscrape_configs:\n  - job_name: %q\n    static_configs:\n      - targets: [%s]\n",
		rules, job, `"`+strings.Join(targets, `", "`)+`"`)
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(h.IPv4.Addr().String(), "9090")
	p, err := h.StartQuiet("prometheus", nil, bin, "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	if err != nil {
		return nil, err
	}
	prom := &Prometheus{host: h, proc: p, url: "http://" + addr}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := h.Exec("curl", "-sf", "--max-time", "2", prom.url+"/-/ready"); err == nil {
			return prom, nil
		}
		if time.Now().After(end) || !p.Running() {
			return nil, fmt.Errorf("prometheus on %s not ready within 30 s: %s", h.Name, p.Output())
		}
	}
}

// Stop ends the server.
func (p *Prometheus) Stop() { p.proc.Kill() }

// Alerts returns the pending and firing alerts.
func (p *Prometheus) Alerts() ([]Alert, error) {
	out, err := p.host.Exec("curl", "-sf", "--max-time", "2", p.url+"/api/v1/alerts")
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string
		Data   struct{ Alerts []Alert }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Status != "success" {
		return nil, fmt.Errorf("prometheus alerts: %v: %s", err, out)
	}
	return r.Data.Alerts, nil
}

// Query evaluates an instant query and returns each series' labels and value.
func (p *Prometheus) Query(q string) ([]Series, error) {
	out, err := p.host.Exec("curl", "-sf", "--max-time", "2", "--data-urlencode", "query="+q, p.url+"/api/v1/query")
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Status != "success" {
		return nil, fmt.Errorf("prometheus query %q: %v: %s", q, err, out)
	}
	var ss []Series
	for _, v := range r.Data.Result {
		s, _ := v.Value[1].(string)
		ss = append(ss, Series{Labels: v.Metric, Value: s})
	}
	return ss, nil
}

// Series is one series of a query's answer.
type Series struct {
	Labels map[string]string
	Value  string
}
