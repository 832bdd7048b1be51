package status

import (
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

const ns = "novaedge_cpvip"

// Metrics exposes a Snapshot in Prometheus form, plus the health check
// duration histogram, which must see every check.
type Metrics struct {
	Registry *prometheus.Registry
	duration prometheus.Histogram
	snapshot func() Snapshot
	journal  *Journal

	vipHeld, vrrpState, bgpUp, bfdUp   *prometheus.Desc
	failOpen                           *prometheus.Desc
	checks, transitions, actions, drop *prometheus.Desc
	sendFailures                       *prometheus.Desc
	conflict, conflicts, defences      *prometheus.Desc
	spreadUp, spreadActive, spreading  *prometheus.Desc
	spreadConns, spreadDialFailures    *prometheus.Desc
	spreadAdopted                      *prometheus.Desc
	healthState, settled, priority     *prometheus.Desc
	advertsSent, advertsReceived       *prometheus.Desc
	buildInfo, lastTransition, reloads *prometheus.Desc
}

// NewMetrics builds a registry with our collector and the Go and process collectors.
func NewMetrics(snapshot func() Snapshot, journal *Journal) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "health_check_duration_seconds",
			Help: "Duration of the apiserver /livez checks.", Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}),
		snapshot:    snapshot,
		journal:     journal,
		vipHeld:     prometheus.NewDesc(ns+"_vip_held", "1 while this node holds the VIP.", []string{"vip"}, nil),
		failOpen:    prometheus.NewDesc(ns+"_fail_open", "1 while this node keeps the VIP although its own check fails (fail open): L2, no node is healthy; BGP, its route is announced demoted.", nil, nil),
		vrrpState:   prometheus.NewDesc(ns+"_vrrp_state", "VRRP state per VIP: 0 initialize, 1 backup, 2 master, 3 fault (no carrier).", []string{"vip"}, nil),
		bgpUp:       prometheus.NewDesc(ns+"_bgp_peer_up", "1 while the BGP session with the peer is established.", []string{"peer"}, nil),
		bfdUp:       prometheus.NewDesc(ns+"_bfd_session_up", "1 while the BFD session with the peer is up.", []string{"peer"}, nil),
		checks:      prometheus.NewDesc(ns+"_health_checks_total", "Apiserver health checks by result.", []string{"result"}, nil),
		transitions: prometheus.NewDesc(ns+"_transitions_total", "Transitions of this node by kind: held and released (once per VIP), healthy and unhealthy.", []string{"to"}, nil),
		actions:     prometheus.NewDesc(ns+"_reconcile_actions_total", "Reconcile actions on the VIP addresses: installed, fixed (bound again after someone removed or changed it), removed, failed (a kernel call; retried), lost (gone from the interface while held, not bound again now), lapsed (its lifetime ran out while the daemon did not run).", []string{"action"}, nil),
		drop:        prometheus.NewDesc(ns+"_packets_dropped_total", "Received VRRP and BFD packets dropped, by reason.", []string{"proto", "reason"}, nil),
		sendFailures: prometheus.NewDesc(ns+"_send_failures_total", "Sends and route changes that failed, by kind: vrrp advertisements, garp (gratuitous ARP / unsolicited NA, after retries), bgp_route (announcements and withdrawals, retried).",
			[]string{"kind"}, nil),
		conflict:      prometheus.NewDesc(ns+"_address_conflict", "1 while another host answers for the VIP (L2): it is not bound here until that host stops.", []string{"vip"}, nil),
		conflicts:     prometheus.NewDesc(ns+"_address_conflicts_total", "Times another host was found answering for a VIP (L2 address conflict detection).", nil, nil),
		defences:      prometheus.NewDesc(ns+"_address_defences_total", "Times this node defended a VIP it held against another host's first answer (RFC 5227: announced it again; a second answer within 10 s is a conflict).", nil, nil),
		spreadUp:      prometheus.NewDesc(ns+"_spread_backend_up", "L2 spreading: 1 while the backend apiserver's checks pass and its last dial did not fail.", []string{"backend"}, nil),
		spreadActive:  prometheus.NewDesc(ns+"_spread_active_connections", "L2 spreading: connections carried to the backend now.", []string{"backend"}, nil),
		spreadConns:   prometheus.NewDesc(ns+"_spread_connections_total", "L2 spreading: connections carried to the backend.", []string{"backend"}, nil),
		spreadAdopted: prometheus.NewDesc(ns+"_spread_adopted_connections_total", "L2 spreading: connections to the backend that a previous run of the daemon carried and this one adopted from systemd's file descriptor store (a crash or SIGKILL of ours cut none of them).", []string{"backend"}, nil),
		spreading:     prometheus.NewDesc(ns+"_spread_active", "L2 spreading: 1 while new connections to the VIP are spread (SPREAD on and its steering attached).", nil, nil),
		spreadDialFailures: prometheus.NewDesc(ns+"_spread_dial_failures_total", "L2 spreading: connections to the backend that failed before its first answer (refused, unanswered within 250 ms, reset); each went to another backend while one was left to try.",
			[]string{"backend"}, nil),
		healthState:     prometheus.NewDesc(ns+"_health_state", "The local apiserver's health as the thresholds judge it: 1 for the current state (unknown, healthy, unhealthy, draining), 0 for the others.", []string{"state"}, nil),
		settled:         prometheus.NewDesc(ns+"_health_settled", "1 while the local apiserver is healthy and its latest checks passed since its latest failure (max(RISE_THRESHOLD, 2), not counting a pass after a network stall): what a takeover from a live master waits for.", nil, nil),
		priority:        prometheus.NewDesc(ns+"_vrrp_priority", "The VRRP priority this node advertises per VIP: PRIORITY while healthy, 1 (fail open) or 0 (not a candidate) while not.", []string{"vip"}, nil),
		advertsSent:     prometheus.NewDesc(ns+"_vrrp_adverts_sent_total", "VRRP advertisements sent (the VIPs share one election: each VIP shows its count).", []string{"vip"}, nil),
		advertsReceived: prometheus.NewDesc(ns+"_vrrp_adverts_received_total", "VRRP advertisements received from the group's other routers, not those dropped (the VIPs share one election: each VIP shows its count).", []string{"vip"}, nil),
		buildInfo:       prometheus.NewDesc(ns+"_build_info", "Always 1: the build's version, its Go version and the mode (l2 or bgp) as labels.", []string{"version", "goversion", "mode"}, nil),
		lastTransition:  prometheus.NewDesc(ns+"_last_transition_timestamp_seconds", "When this node last changed role (held, released, healthy, unhealthy), in seconds since the epoch; absent before the first.", nil, nil),
		reloads:         prometheus.NewDesc(ns+"_config_reloads_total", "Reloads asked (SIGHUP, systemctl reload) by result: ok (applied; what needs a restart is logged) or refused (invalid or missing file: the running configuration kept).", []string{"result"}, nil),
	}
	m.Registry.MustRegister(m, m.duration, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveCheck records one health check's duration.
func (m *Metrics) ObserveCheck(d time.Duration) { m.duration.Observe(d.Seconds()) }

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.vipHeld, m.failOpen, m.vrrpState, m.bgpUp, m.bfdUp, m.checks, m.transitions, m.actions, m.drop, m.sendFailures, m.conflict, m.conflicts, m.defences,
		m.spreadUp, m.spreadActive, m.spreadConns, m.spreadDialFailures, m.spreadAdopted, m.spreading,
		m.healthState, m.settled, m.priority, m.advertsSent, m.advertsReceived, m.buildInfo, m.lastTransition, m.reloads} {
		ch <- d
	}
}

// Collect implements prometheus.Collector from one snapshot.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	s := m.snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, v := range s.VIPs {
		gauge(m.vipHeld, boolf(v.Held), v.Address)
		if s.Mode == "l2" {
			gauge(m.conflict, boolf(v.Conflict != nil), v.Address)
		}
	}
	if s.Mode == "l2" {
		counter(m.conflicts, s.ConflictsDetected)
		counter(m.defences, s.ConflictsDefended)
	}
	gauge(m.failOpen, boolf(s.FailOpen.InForce))
	for _, v := range s.VRRP {
		gauge(m.vrrpState, float64(map[string]int{"backup": 1, "master": 2, "fault": 3}[v.State]), v.VIP)
		gauge(m.priority, float64(v.Priority), v.VIP)
		counter(m.advertsSent, v.Sent, v.VIP)
		counter(m.advertsReceived, v.Received, v.VIP)
	}
	for _, p := range s.BGPPeers {
		gauge(m.bgpUp, boolf(p.State == "established"), p.Address)
	}
	for _, b := range s.BFD {
		gauge(m.bfdUp, boolf(b.State == "up"), b.Peer)
	}
	if len(s.Spread) > 0 {
		gauge(m.spreading, boolf(s.SpreadActive))
	}
	for _, b := range s.Spread {
		gauge(m.spreadUp, boolf(b.Health == "up" && !b.DialFailed), b.Address)
		gauge(m.spreadActive, float64(b.Active), b.Address)
		counter(m.spreadConns, b.Connections, b.Address)
		counter(m.spreadAdopted, b.Adopted, b.Address)
		counter(m.spreadDialFailures, b.DialFailures, b.Address)
	}
	for _, r := range []string{"success", "failure"} {
		counter(m.checks, s.Health.Checks[r], r)
	}
	for _, st := range []string{"unknown", "healthy", "unhealthy", "draining"} {
		gauge(m.healthState, boolf(s.Health.State == st), st)
	}
	gauge(m.settled, boolf(s.Health.Settled))
	gauge(m.buildInfo, 1, s.Version, runtime.Version(), s.Mode)
	if n := len(s.Transitions); n > 0 {
		gauge(m.lastTransition, float64(s.Transitions[n-1].At.UnixMilli())/1e3)
	}
	for _, r := range []string{"ok", "refused"} {
		counter(m.reloads, s.Reloads[r], r)
	}
	for _, to := range []string{"held", "released", "healthy", "unhealthy"} {
		counter(m.transitions, m.journal.Counts()[to], to)
	}
	for _, a := range []string{"installed", "fixed", "removed", "failed", "lost", "lapsed"} {
		counter(m.actions, s.Reconcile[a], a)
	}
	for kind, n := range s.SendFailures {
		counter(m.sendFailures, n, kind)
	}
	for proto, reasons := range s.Drops {
		for reason, n := range reasons {
			counter(m.drop, n, proto, reason)
		}
	}
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
