// Package status is the read-only view of a running daemon: a Snapshot
// assembled from the parts (health, VIPs, VRRP, BGP, BFD, reconcile), served
// as JSON on /status, as Prometheus metrics on /metrics, and as /healthz
// (process alive) and /readyz (configuration loaded, announcer running). It
// observes and never drives behaviour.
package status
