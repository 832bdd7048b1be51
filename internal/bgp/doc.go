// Package bgp announces the VIP through one embedded GoBGP v4 server per
// process life. It connects out only (ListenPort -1: no privileged port),
// sends IPv4 VIPs to IPv4 sessions and IPv6 VIPs to IPv6 sessions (next hop
// = the session's own address unless configured), and watches the peers'
// states. GoBGP's own BFD stays off: package bfd does that job.
package bgp
