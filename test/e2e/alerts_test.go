package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/manifests"
	"github.com/novaedge/cpvip/test/lab"
)

// rulesFile is the shipped alert rules file.
const rulesFile = "../../manifests/" + manifests.RulesFile

// prometheusBinary is Debian's Prometheus server unpacked by
// test/tools/prometheus.sh (make e2e passes it in NOVAEDGE_PROMETHEUS).
func prometheusBinary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("NOVAEDGE_PROMETHEUS")
	if bin == "" {
		needBuilt(t, fmt.Errorf("NOVAEDGE_PROMETHEUS is not set: run test/tools/prometheus.sh (make e2e does)"))
	}
	return bin
}

// alertWatch polls a Prometheus's alerts every 500 ms (it evaluates every
// second) and keeps what it saw.
type alertWatch struct {
	prom *lab.Prometheus
	mu   sync.Mutex
	seen []alertSeen
	stop chan struct{}
	done chan struct{}
}

type alertSeen struct {
	at     time.Time
	alerts []lab.Alert
}

func watchAlerts(t testing.TB, p *lab.Prometheus) *alertWatch {
	w := &alertWatch{prom: p, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			if as, err := p.Alerts(); err == nil {
				w.mu.Lock()
				w.seen = append(w.seen, alertSeen{time.Now(), as})
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(w.stop); <-w.done })
	return w
}

// key names an alert with the labels that tell its instances apart.
func key(a lab.Alert) string {
	var ls []string
	for _, l := range []string{"instance", "vip", "peer", "kind"} {
		if v := a.Labels[l]; v != "" {
			ls = append(ls, l+"="+v)
		}
	}
	return a.Name() + "{" + strings.Join(ls, ",") + "}"
}

// in returns the alerts seen in state (pending or firing) in [from, to].
func (w *alertWatch) in(state string, from, to time.Time) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	set := map[string]bool{}
	for _, s := range w.seen {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		for _, a := range s.alerts {
			if a.State == state {
				set[key(a)] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// pendingRuns returns, for each alert pending at some time in [from, to],
// the longest run of polls it was pending without a gap.
func (w *alertWatch) pendingRuns(from, to time.Time) map[string]time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	start, longest := map[string]time.Time{}, map[string]time.Duration{}
	for _, s := range w.seen {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		now := map[string]bool{}
		for _, a := range s.alerts {
			if a.State == "pending" {
				now[key(a)] = true
				if _, ok := start[key(a)]; !ok {
					start[key(a)] = s.at
				}
				longest[key(a)] = max(longest[key(a)], s.at.Sub(start[key(a)]))
			}
		}
		for k := range start {
			if !now[k] {
				delete(start, k)
			}
		}
	}
	return longest
}

// wait returns how long after since the alert name was first seen in
// state, waiting up to within.
func (w *alertWatch) wait(t testing.TB, name, state string, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	for end := since.Add(within); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		w.mu.Lock()
		for _, s := range w.seen {
			if s.at.Before(since) {
				continue
			}
			for _, a := range s.alerts {
				if a.Name() == name && a.State == state {
					w.mu.Unlock()
					return s.at.Sub(since)
				}
			}
		}
		w.mu.Unlock()
	}
	t.Fatalf("%s not %s within %s of the fault; seen firing: %v, pending: %v", name, state, within,
		w.in("firing", since, time.Now()), w.in("pending", since, time.Now()))
	return 0
}

// quiet fails when an alert fired in [from, now], or was pending for more
// than half its for: (a silent scenario that would page, given time);
// shorter pending runs (a handover seen by a scrape) are logged.
func (w *alertWatch) quiet(t testing.TB, what string, from time.Time, forOf map[string]string) alertMeasure {
	t.Helper()
	now := time.Now()
	runs := w.pendingRuns(from, now)
	defer t.Logf("FIGURE alerts, %s (%s): fired %v; pending at most %v", what, now.Sub(from).Round(time.Second), w.in("firing", from, now), runs)
	if f := w.in("firing", from, now); len(f) > 0 {
		t.Errorf("%s: alerts fired: %v", what, f)
	}
	for k, d := range runs {
		name, _, _ := strings.Cut(k, "{")
		if limit, err := time.ParseDuration(forOf[name]); err == nil && d > limit/2 {
			t.Errorf("%s: %s pending for %s, more than half its for: %s", what, k, d.Round(100*time.Millisecond), forOf[name])
		}
	}
	return alertMeasure{Fault: what, State: "silent", After: now.Sub(from).Round(time.Second).String()}
}

// alertMeasure is one row of the fault -> alert table
// (manifests/monitoring/measured-l2.json, docs/monitoring.md).
type alertMeasure struct {
	Fault string `json:"fault"`
	Alert string `json:"alert,omitempty"` // empty: a silent scenario
	State string `json:"state"`           // pending, firing, or silent
	After string `json:"after"`           // from the fault; silent: how long it was watched
	For   string `json:"for,omitempty"`   // the rule's for: then
}

// measuredFiles is where NOVAEDGE_ALERTS_UPDATE=1 writes each test's table.
const measuredFiles = "../../manifests/monitoring/measured-%s.json"

// steadyFor is how long the steady state is watched for alerts:
// NOVAEDGE_ALERTS_STEADY (the 10 minutes docs/monitoring.md quotes), else
// a minute.
func steadyFor() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("NOVAEDGE_ALERTS_STEADY")); err == nil && d > 0 {
		return d
	}
	return time.Minute
}

// alertLab is a real Prometheus watching a lab's daemons with the shipped
// rules, and the table of what it measured.
type alertLab struct {
	t     *testing.T
	w     *alertWatch
	forOf map[string]string
	table []alertMeasure
}

// startAlertLab starts Prometheus on h scraping targets (the job the rules
// expect) and returns once every target is up and ready (a query) gives
// want.
func startAlertLab(t *testing.T, bin string, h *lab.Host, targets []string, ready, want string) *alertLab {
	t.Helper()
	forOf, err := manifests.AlertFor()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.StartPrometheus(bin, t.TempDir(), "novaedge-cpvip", targets, rules)
	if err != nil {
		t.Fatal(err)
	}
	n := strconv.Itoa(len(targets))
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		up, err1 := p.Query(`count(up{job="novaedge-cpvip"} == 1)`)
		got, err2 := p.Query(ready)
		if err1 == nil && err2 == nil && len(up) == 1 && up[0].Value == n && len(got) == 1 && got[0].Value == want {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("Prometheus does not see %s targets up and %s = %s: up %v %v, got %v %v", n, ready, want, up, err1, got, err2)
		}
	}
	time.Sleep(2 * time.Second) // the rules evaluated on full series
	// Ended before the test's directories are removed under it (cleanups
	// run last first), not at the lab's end: a subtest's Prometheus would
	// scrape on through the rest of its test.
	t.Cleanup(p.Stop)
	return &alertLab{t: t, w: watchAlerts(t, p), forOf: forOf}
}

// loud waits for alert in state from the fault at since; a firing one
// within its for: and margin (detection, a scrape, an evaluation, and the
// daemon's own wait, as the conflict check's second answer).
func (a *alertLab) loud(fault, alert, state string, since time.Time, margin time.Duration) {
	a.t.Helper()
	d, err := time.ParseDuration(a.forOf[alert])
	if err != nil && a.forOf[alert] != "" {
		a.t.Fatalf("%s: for %q: %v", alert, a.forOf[alert], err)
	}
	if state == "pending" {
		d = 0
	}
	after := a.w.wait(a.t, alert, state, since, d+margin)
	a.t.Logf("FIGURE alert, %s: %s %s after %s (for: %s)", fault, alert, state, after.Round(100*time.Millisecond), a.forOf[alert])
	a.table = append(a.table, alertMeasure{Fault: fault, Alert: alert, State: state, After: after.Round(100 * time.Millisecond).String(), For: a.forOf[alert]})
}

// quiet fails when an alert fired since from, and adds the silent row.
func (a *alertLab) quiet(what string, from time.Time) {
	a.t.Helper()
	a.table = append(a.table, a.w.quiet(a.t, what, from, a.forOf))
}

// write saves the table as measured-name.json with NOVAEDGE_ALERTS_UPDATE=1
// (docs/monitoring.md is generated from it), if the test passed.
func (a *alertLab) write(name string) {
	if os.Getenv("NOVAEDGE_ALERTS_UPDATE") != "1" || a.t.Failed() {
		return
	}
	b, err := json.MarshalIndent(struct {
		Measured string         `json:"measured"`
		Rows     []alertMeasure `json:"rows"`
	}{time.Now().UTC().Format("2006-01-02"), a.table}, "", "  ")
	if err != nil {
		a.t.Fatal(err)
	}
	if err := os.WriteFile(fmt.Sprintf(measuredFiles, name), append(b, '\n'), 0o644); err != nil {
		a.t.Fatal(err)
	}
}

// TestAlertRules runs the shipped alert rules (manifests/monitoring) on a
// real Prometheus (Debian's 2.42) scraping three L2 nodes every second, and
// drives the faults they exist for. Silent: the steady state, a planned
// restart of the holder's daemon, a rolling restart of the apiservers with
// the shutdown delay (the VIP follows each drain), the holder's apiserver
// killed and its link cut (the VIP moves: handled, no page). Loud: each
// fault's alert fires within its for: and a margin. Alerts with a long for:
// are waited for to pending; they fire that for: later, as Prometheus
// evaluates. NOVAEDGE_ALERTS_UPDATE=1 writes the measured table
// (manifests/monitoring/measured-l2.json, docs/monitoring.md).
func TestAlertRules(t *testing.T) {
	bin := prometheusBinary(t)
	needKeepalived(t)
	c := newCluster(t, 3, v4only)
	for i := range c.nodes {
		c.env[i] = []string{"NOVAEDGE_CP_VIP_METRICS_ADDR=:9450"}
	}
	pm, err := c.AddHost("pm", mustPrefix("192.0.2.60/24"), mustPrefix("2001:db8::60/64"), false)
	if err != nil {
		t.Fatal(err)
	}
	c.startAll(t)
	ours := len(c.nodes) // keepalived's node comes later
	c.waitHolder(t, vip4, -1, 10*time.Second)
	var targets []string
	for _, n := range c.nodes {
		targets = append(targets, n.IPv4.Addr().String()+":9450")
	}
	a := startAlertLab(t, bin, pm, targets, `sum(novaedge_cpvip_vip_held)`, "1")
	w, loud := a.w, a.loud
	// Silent: the steady state.
	from := time.Now()
	time.Sleep(steadyFor())
	a.quiet("steady state", from)

	// Silent: a planned restart of the holder's daemon (systemctl
	// restart: SIGTERM, started again 200 ms after it exits).
	from = time.Now()
	h, _ := c.waitHolder(t, vip4, -1, 5*time.Second)
	if err := c.procs[h].Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := c.procs[h].Wait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	c.start(t, h)
	time.Sleep(20 * time.Second)
	a.quiet("planned restart of the holder's daemon (SIGTERM, started 200 ms later)", from)

	// Silent: a rolling restart of the apiservers with the shutdown delay
	// (2 s draining, 1 s down, then up), in node order.
	from = time.Now()
	for i := range c.nodes {
		skip := c.procs[i].Lines()
		for _, step := range []struct {
			ans lab.Answer
			d   time.Duration
		}{{lab.Draining, 2 * time.Second}, {lab.Down, time.Second}, {lab.OK, 0}} {
			if err := c.apis[i].Set(step.ans); err != nil {
				t.Fatal(err)
			}
			time.Sleep(step.d)
		}
		waitLine(t, c.procs[i], skip, "API server health changed", "state=healthy")
		time.Sleep(2 * time.Second)
	}
	time.Sleep(15 * time.Second)
	a.quiet("rolling restart of the apiservers (2 s shutdown delay, then 1 s down each)", from)

	// Silent for a while: the holder's apiserver killed (the VIP moves;
	// the lost redundancy is told after 10 minutes).
	from = time.Now()
	h, _ = c.waitHolder(t, vip4, -1, 5*time.Second)
	if err := c.apis[h].Set(lab.Down); err != nil {
		t.Fatal(err)
	}
	c.waitHolder(t, vip4, h, 5*time.Second)
	loud("the holder's apiserver killed (the VIP moves)", "NovaedgeCPVIPRedundancyLost", "pending", from, 15*time.Second)
	time.Sleep(10 * time.Second)
	a.quiet("the holder's apiserver killed", from)
	skip := c.procs[h].Lines()
	if err := c.apis[h].Set(lab.OK); err != nil {
		t.Fatal(err)
	}
	waitLine(t, c.procs[h], skip, "API server health changed", "state=healthy")

	// Silent for a while: the holder's link cut (the VIP moves; the node
	// unreachable is told after 2 minutes).
	from = time.Now()
	h, _ = c.waitHolder(t, vip4, -1, 5*time.Second)
	if err := c.nodes[h].SetLink(false); err != nil {
		t.Fatal(err)
	}
	c.waitHolder(t, vip4, h, 5*time.Second)
	loud("the holder's link cut (the VIP moves)", "NovaedgeCPVIPTargetDown", "pending", from, 15*time.Second)
	time.Sleep(10 * time.Second)
	a.quiet("the holder's link cut", from)
	if err := c.nodes[h].SetLink(true); err != nil {
		t.Fatal(err)
	}

	// Loud: a foreign VRRP group on our VRID.
	from = time.Now()
	_, kp := c.addKeepalived(t, "ka", lab.Keepalived{VRID: 51, Priority: 200, Advert: "1", VIP: "192.0.2.200/32"})
	waitLine(t, kp, 0, "Entering MASTER STATE")
	loud("keepalived with another address on our VRID", "NovaedgeCPVIPForeignGroup", "firing", from, 15*time.Second)
	kp.Kill()

	// Loud: another host answers for the VIP (so no node holds it), while
	// a backup's daemon is killed and stays down.
	from = time.Now()
	h, _ = c.waitHolder(t, vip4, -1, 5*time.Second)
	killed := (h + 1) % ours
	c.procs[killed].Kill()
	sq, err := c.AddHost("sq", mustPrefix("192.0.2.50/24"), mustPrefix("2001:db8::50/64"), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sq.Exec("ip", "addr", "add", vip4.String(), "dev", "eth0", "nodad"); err != nil {
		t.Fatal(err)
	}
	loud("another host answers for the VIP", "NovaedgeCPVIPAddressConflict", "firing", from, 15*time.Second)
	loud("another host answers for the VIP", "NovaedgeCPVIPNoHolder", "firing", from, 15*time.Second)
	if _, err := sq.Exec("ip", "addr", "del", vip4.String(), "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
	c.waitHolder(t, vip4, -1, 15*time.Second)

	// Loud: every apiserver failing (fail open), and the killed daemon.
	failFrom := time.Now()
	for i := range ours {
		if err := c.apis[i].Set(lab.ServerError); err != nil {
			t.Fatal(err)
		}
	}
	loud("every apiserver failing (fail open)", "NovaedgeCPVIPFailOpen", "firing", failFrom, 15*time.Second)
	loud("a backup's daemon SIGKILLed and left down", "NovaedgeCPVIPTargetDown", "firing", from, 15*time.Second)
	all := w.in("firing", from, time.Now())
	t.Logf("alerts fired during the loud faults: %v", all)
	if slices.ContainsFunc(all, func(k string) bool { return strings.HasPrefix(k, "NovaedgeCPVIPTwoHolders") }) {
		t.Errorf("two holders alerted during the faults: %v", all)
	}
	a.write("l2")
}

// TestAlertRulesBGP: the BGP and BFD alerts on a real Prometheus: two BGP
// nodes with BFD peer with FRR; FRR's bgpd and bfdd killed, each healthy
// node's sessions go down and their alerts fire after their for:, and, no
// node announcing the VIP to any peer, the one that it has no holder.
func TestAlertRulesBGP(t *testing.T) {
	bin := prometheusBinary(t)
	b := newBGPLab(t, 2)
	b.startFRRWithBFDAt(t, 300)
	for i := range b.nodes {
		b.start(t, i, append(bfdEnv, "NOVAEDGE_CP_VIP_METRICS_ADDR=:9450", "NOVAEDGE_BFD_TX_INTERVAL=300ms", "NOVAEDGE_BFD_RX_INTERVAL=300ms")...)
	}
	b.waitHops(t, vip4, 30*time.Second, nodeV4(0), nodeV4(1))
	var targets []string
	for i := range b.nodes {
		targets = append(targets, nodeV4(i).String()+":9450")
	}
	a := startAlertLab(t, bin, b.router, targets, `sum(novaedge_cpvip_bgp_peer_up) + sum(novaedge_cpvip_bfd_session_up)`, "4")
	from := time.Now()
	time.Sleep(15 * time.Second)
	a.quiet("BGP with BFD, steady", from)
	from = time.Now()
	for _, d := range []string{"bgpd", "bfdd"} {
		b.frr.Daemon(d).Kill()
	}
	a.loud("the router's bgpd and bfdd killed", "NovaedgeCPVIPBGPSessionDown", "firing", from, 15*time.Second)
	a.loud("the router's bgpd and bfdd killed", "NovaedgeCPVIPBFDSessionDown", "firing", from, 15*time.Second)
	a.loud("the router's bgpd and bfdd killed", "NovaedgeCPVIPNoHolder", "firing", from, 15*time.Second)
	t.Logf("alerts fired: %v", a.w.in("firing", from, time.Now()))
	a.write("bgp")
}
