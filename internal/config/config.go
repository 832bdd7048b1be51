package config

import (
	"net/netip"
	"strconv"
	"time"
)

// Config is the whole configuration of the daemon. Every field carries the
// public environment variable name (envconfig tag) and the flag that
// overrides it (flag tag). An empty value means "not set" (the default
// applies), except where the field is tagged empty:"off".
type Config struct {
	VIPAddress            PrefixList    `envconfig:"NOVAEDGE_CP_VIP_ADDRESS" flag:"vip-address" required:"true" desc:"VIP in CIDR form (192.0.2.100/32); a comma-separated list of at most one IPv4 and one IPv6 prefix gives a dual-stack VIP. Host prefixes (/32, /128); in l2 mode also exactly the prefix of the interface's subnet."`
	Interface             string        `envconfig:"NOVAEDGE_CP_VIP_INTERFACE" flag:"interface" desc:"L2: interface to bind the VIP on; empty = the up interface with an address whose subnet holds the VIP, else the one holding the default route. BGP: the VIP goes on lo unless set."`
	APIPort               uint16        `envconfig:"NOVAEDGE_CP_VIP_API_PORT" flag:"api-port" default:"6443" desc:"Port of the local kube-apiserver."`
	HealthInterval        time.Duration `envconfig:"NOVAEDGE_CP_VIP_HEALTH_INTERVAL" reload:"live" flag:"health-interval" default:"1s" desc:"Time between two health checks of https://localhost:PORT/livez, 10ms-5m."`
	HealthFastInterval    time.Duration `envconfig:"NOVAEDGE_CP_VIP_HEALTH_FAST_INTERVAL" reload:"live" flag:"health-fast-interval" default:"100ms" desc:"Time between checks after a failed one, until FAIL_THRESHOLD decides (HAProxy's fastinter), so a dead apiserver is noticed in a fraction of HEALTH_INTERVAL x FAIL_THRESHOLD; 0 = HEALTH_INTERVAL, else 10ms-5m. A check also runs at once when the apiserver closes the kept connection."`
	HealthTimeout         time.Duration `envconfig:"NOVAEDGE_CP_VIP_HEALTH_TIMEOUT" reload:"live" flag:"health-timeout" default:"3s" desc:"Timeout of one health check request, 1ms-1m."`
	HealthHungAfter       time.Duration `envconfig:"NOVAEDGE_CP_VIP_HEALTH_HUNG_AFTER" reload:"live" flag:"health-hung-after" default:"500ms" desc:"A check still without an answer after this long, while the apiserver answers /livez/ping on a new connection within a tenth of it, finds the apiserver hung (it runs, but what the check waits for, etcd, does not: its clients' requests hang too) and counts as FAIL_THRESHOLD - 1 failures, so the next failed check (every HEALTH_FAST_INTERVAL) decides. A slow ping means a slow apiserver (CPU, overload): the check waits on to HEALTH_TIMEOUT as usual. 0 = off (also when not below HEALTH_TIMEOUT), else 10ms-1m."`
	HealthEtcdPorts       PortList      `envconfig:"NOVAEDGE_CP_VIP_HEALTH_ETCD_PORTS" flag:"health-etcd-ports" default:"2379,2380" empty:"off" desc:"Ports of etcd on this host (client, peer; comma-separated). A check stalled past HEALTH_HUNG_AFTER while the ping answers is not hung, and waits on to HEALTH_TIMEOUT, when an etcd listens on one of them, reads what it is sent, and its connections to other hosts lose TCP segments while still acknowledged: a lossy network stalls every apiserver now and then, and a move would only reset clients. Read from the kernel's socket table (filtered to these ports), only on such a stall; at most 64. Empty = off: the fast ping alone finds a hung apiserver (so always with an etcd elsewhere)."`
	Drain                 bool          `envconfig:"NOVAEDGE_CP_VIP_DRAIN" flag:"drain" default:"true" desc:"Hand the VIP over as soon as the local apiserver begins a graceful shutdown (its /readyz shutdown check fails while /livez still passes, for --shutdown-delay-duration): as when unhealthy: L2 the fail-open priority 1 (0 with FAIL_OPEN off), BGP a demoted route (a withdrawal with FAIL_OPEN off). Checks then ask /readyz first and /livez only when /readyz fails for another reason."`
	FailOpen              bool          `envconfig:"NOVAEDGE_CP_VIP_FAIL_OPEN" flag:"fail-open" default:"true" desc:"A health failure that every node shares never takes the VIP away: L2, an unhealthy node that was healthy since it started stays in the election with priority 1, keeping the VIP while no node is healthy and handing it to a healthy node whose latest checks passed (settled: RISE_THRESHOLD of them, 2 at least, none after a network stall) within that node's skew time (an apiserver that certainly does not serve, its port refused or draining, hands the VIP to any healthy node, settled or not, and keeps it with priority 1 if none takes it); BGP, such a node keeps its route but demoted (AS path +3, GRACEFUL_SHUTDOWN community) instead of withdrawing it, so routers use it only while no node is healthy. false = strict: an unhealthy node leaves the election (priority 0) or withdraws, even when no other node can serve."`
	FailThreshold         int           `envconfig:"NOVAEDGE_CP_VIP_FAIL_THRESHOLD" reload:"live" flag:"fail-threshold" default:"3" desc:"Consecutive failed checks before the node is unhealthy and releases the VIP. A new connection refused or reset (no process serves the port: the apiserver stopped, died or is being killed) decides at once."`
	RiseThreshold         int           `envconfig:"NOVAEDGE_CP_VIP_RISE_THRESHOLD" reload:"live" flag:"rise-threshold" default:"1" desc:"Consecutive successful checks before the node is healthy and may (re)claim the VIP. L2: it takes the VIP from a live holder (one failing its checks, or with PREEMPT a weaker one) only once settled: its latest max(RISE_THRESHOLD, 2) checks passed, none of them after a stall blamed on the network (HEALTH_ETCD_PORTS), so a failure every node shares moves nothing; a healthy node that has followed a failing holder for ten HEALTH_INTERVALs takes it settled or not."`
	SATokenPath           string        `envconfig:"NOVAEDGE_CP_VIP_SA_TOKEN_PATH" flag:"sa-token-path" default:"/var/run/secrets/kubernetes.io/serviceaccount/token" desc:"Bearer token file. Present: sent as Authorization: Bearer, only over a connection whose certificate the cluster CA verified (or with INSECURE_SKIP_TLS_VERIFY), and then only 200 is healthy. Absent, or not sent: 200 and 401 are healthy."`
	CAFile                string        `envconfig:"NOVAEDGE_CP_VIP_CA_FILE" flag:"ca-file" desc:"CA bundle that verifies the apiserver's certificate; empty = auto: kubeadm's /etc/kubernetes/pki/ca.crt or k3s's /var/lib/rancher/k3s/server/tls/server-ca.crt, whichever exists. Watched: until the file exists (before bootstrap) the apiserver is checked unverified, and verification starts by itself once it appears."`
	TLSServerName         string        `envconfig:"NOVAEDGE_CP_VIP_TLS_SERVER_NAME" flag:"tls-server-name" default:"kubernetes" desc:"Name verified in the apiserver's serving certificate (kubeadm's and k3s's carry kubernetes; neither carries localhost)."`
	InsecureSkipTLSVerify bool          `envconfig:"NOVAEDGE_CP_VIP_INSECURE_SKIP_TLS_VERIFY" flag:"insecure-skip-tls-verify" default:"false" desc:"Verify nothing and still send the token to whatever listens on the apiserver's port (warned at start and by check-config). Off (the default): the apiserver is verified against the cluster CA, and while no CA exists yet the check runs unverified and without the token (200 and 401 healthy)."`
	Mode                  Mode          `envconfig:"NOVAEDGE_CP_VIP_MODE" flag:"mode" default:"l2" desc:"l2 (VRRP election, ARP/NDP) or bgp (every healthy node announces the VIP)."`
	VRID                  int           `envconfig:"NOVAEDGE_CP_VIP_VRID" flag:"vrid" default:"51" desc:"L2: VRRP virtual router id 1-255, the same on all nodes of one VIP."`
	Priority              int           `envconfig:"NOVAEDGE_CP_VIP_PRIORITY" reload:"live" flag:"priority" default:"100" desc:"L2: VRRP priority while healthy, 2-254 (1 is the fail-open priority of an unhealthy node; 1-254 with FAIL_OPEN off, where a master at 1 is still taken over by any healthy, settled node of higher priority whatever PREEMPT says: the group reads 1 as fail open)."`
	AdvertInterval        time.Duration `envconfig:"NOVAEDGE_CP_VIP_ADVERT_INTERVAL" flag:"advert-interval" default:"200ms" desc:"L2: VRRP advertisement interval, 10ms-40.95s in steps of 10ms. A backup takes over after 3 intervals and its skew without one: about 0.72 s at 200ms (a cut link or a dead host costs a client under a second), 3.6 s at 1s (the former default; docs/vrrp.md#choosing-the-defaults)."`
	AdvertsPerInterval    int           `envconfig:"NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL" flag:"adverts-per-interval" default:"2" desc:"L2: advertisements the master sends per ADVERT_INTERVAL, evenly spaced, 1-10 (1: RFC 5798's one). Each still says ADVERT_INTERVAL, so the backups wait as long as before (3 intervals and the skew) and takeovers are as fast, but a false one needs 7 advertisements lost in a row with 2 (10 with 3) instead of 3: with 20 % of them lost, 3 in a row go once in 125 advertisements, 7 once in 78 000 (at 200ms x 2, about every 2 hours per backup, which then still asks the master's host before taking over: RESTART_WAIT). docs/vrrp.md#lost-advertisements. keepalived backups in the group follow it as ours do."`
	RestartWait           time.Duration `envconfig:"NOVAEDGE_CP_VIP_RESTART_WAIT" flag:"restart-wait" default:"4s" desc:"L2, with CONFLICT_CHECK: how long backups wait for a master that stopped advertising while its host still answers ARP / NDP for the VIP, counted from its last advertisement: its daemon was killed and the kubelet or systemd starts it again, and it resumes holding the VIP, which then never moves. Half an ADVERT_INTERVAL before they would take over, the backups probe the VIP; while the master's host answers they probe again every half interval, and take over once it stops (cut off, powered off) or after RESTART_WAIT. 0 or no longer than the master down interval (3 intervals and the skew) = take over without asking. The holder binds the VIP with a lifetime (ip addr: dynamic) that lapses before this wait ends unless renewed: RESTART_WAIT less half a second, in whole seconds, at least 1 s (3 s at the default, renewed every 500 ms), so a daemon killed or frozen for longer never leaves two hosts answering for the VIP (where the backups wait under a second, the 1 s lifetime outlives their wait by the difference). docs/vrrp.md#when-our-daemon-dies-or-hangs."`
	Preempt               bool          `envconfig:"NOVAEDGE_CP_VIP_PREEMPT" reload:"live" flag:"preempt" default:"false" desc:"L2: a higher-priority node takes the VIP back from a lower-priority master, once its health has settled (RISE_THRESHOLD)."`
	Peers                 AddrList      `envconfig:"NOVAEDGE_CP_VIP_PEERS" flag:"peers" desc:"L2: unicast VRRP peers (comma-separated addresses); empty = multicast 224.0.0.18 / ff02::12."`
	GARPRepeat            int           `envconfig:"NOVAEDGE_CP_VIP_GARP_REPEAT" reload:"live" flag:"garp-repeat" default:"3" desc:"L2: announcements (gratuitous ARP / unsolicited NA) sent on takeover, 1.1s apart, 1-100."`
	GARPRefresh           time.Duration `envconfig:"NOVAEDGE_CP_VIP_GARP_REFRESH" reload:"live" flag:"garp-refresh" default:"0s" desc:"L2: periodic re-announcement while holding the VIP; 0 = off, else 1s-1h."`
	ConflictCheck         bool          `envconfig:"NOVAEDGE_CP_VIP_CONFLICT_CHECK" flag:"conflict-check" default:"true" desc:"L2: never bind the VIP while a host outside our VRRP group answers for it (address conflict detection: ARP probes as in RFC 5227, neighbour solicitations for IPv6). A node that does not hold the VIP probes it every second, so a takeover waits for nothing; a conflict keeps the VIP unbound (released if it was bound), logged with the other host's MAC, until a probe (every 250ms) goes unanswered. false = bind without checking."`
	Spread                bool          `envconfig:"NOVAEDGE_CP_VIP_SPREAD" flag:"spread" default:"false" desc:"L2: the holder spreads new connections to VIP:API_PORT over every healthy apiserver, its own and SPREAD_BACKENDS, each checked like the local one (CA-verified, drain-aware with DRAIN); a refused connection, or one whose apiserver does not answer the client's first bytes within 2 s, is retried on another. Steered by an sk_lookup program that ends with the process: stopped or killed, the local apiserver serves the VIP as with false. Needs CAP_BPF and the bpf system call: under systemd, install /usr/share/novaedge-cpvip/spread.conf as a drop-in (docs/architecture.md#spreading-api-connections)."`
	SpreadBackends        AddrList      `envconfig:"NOVAEDGE_CP_VIP_SPREAD_BACKENDS" flag:"spread-backends" desc:"L2, with SPREAD: the control-plane nodes' apiserver addresses (comma-separated, on API_PORT); this node's own addresses among them are skipped, so every node can have the same list. Empty = the global addresses of NOVAEDGE_CP_VIP_PEERS of one family, IPv4 if any."`

	BGPLocalAS     uint32        `envconfig:"NOVAEDGE_BGP_LOCAL_AS" flag:"bgp-local-as" desc:"BGP: local AS number (required in bgp mode)."`
	BGPRouterID    netip.Addr    `envconfig:"NOVAEDGE_BGP_ROUTER_ID" flag:"bgp-router-id" desc:"BGP: router id in IPv4 form (required in bgp mode)."`
	BGPPeerAddress netip.Addr    `envconfig:"NOVAEDGE_BGP_PEER_ADDRESS" flag:"bgp-peer-address" desc:"BGP: address of the single peer (required in bgp mode unless NOVAEDGE_BGP_PEERS is set)."`
	BGPPeerAS      uint32        `envconfig:"NOVAEDGE_BGP_PEER_AS" flag:"bgp-peer-as" desc:"BGP: AS of the single peer (required with NOVAEDGE_BGP_PEER_ADDRESS)."`
	BGPPeers       PeerList      `envconfig:"NOVAEDGE_BGP_PEERS" flag:"bgp-peers" desc:"BGP: several peers as ADDR@AS[?OPTIONS][,ADDR@AS...], IPv6 in brackets ([2001:db8::1]@65000); replaces the two variables above. OPTIONS, joined by &: password=P (this peer's TCP MD5, percent-encoded: %2C for a comma, %26 for &, %25 for %) and multihop=N (eBGP multihop TTL 1-255); they override NOVAEDGE_BGP_PASSWORD and NOVAEDGE_BGP_MULTIHOP for that peer. check-config and the logs never show the passwords."`
	BGPPassword    string        `envconfig:"NOVAEDGE_BGP_PASSWORD" flag:"bgp-password" secret:"true" desc:"BGP: TCP MD5 password for every peer without one of its own; empty = none."`
	BGPHoldTime    time.Duration `envconfig:"NOVAEDGE_BGP_HOLD_TIME" flag:"bgp-hold-time" default:"9s" desc:"BGP: hold time in whole seconds, 3s-65535s (keepalive = hold/3)."`
	BGPMultihop    int           `envconfig:"NOVAEDGE_BGP_MULTIHOP" flag:"bgp-multihop" default:"0" desc:"BGP: eBGP multihop TTL 1-255; 0 = directly connected peers."`
	BGPNextHop     netip.Addr    `envconfig:"NOVAEDGE_BGP_NEXT_HOP" flag:"bgp-next-hop" desc:"BGP: next hop to advertise for the VIPs of its address family; empty = the session's local address. An IPv6 VIP with only IPv4 peers goes over the IPv4 sessions (MP-BGP) with an IPv6 next hop: this address if it is IPv6, else the first global IPv6 address of the interface toward each peer."`
	BGPCommunities Communities   `envconfig:"NOVAEDGE_BGP_COMMUNITIES" flag:"bgp-communities" desc:"BGP: standard communities AS:VAL (comma-separated) attached to the VIP route."`

	BFDEnabled    bool          `envconfig:"NOVAEDGE_BFD_ENABLED" flag:"bfd" default:"false" desc:"BFD with every BGP peer (bgp mode)."`
	BFDDetectMult int           `envconfig:"NOVAEDGE_BFD_DETECT_MULT" flag:"bfd-detect-mult" default:"3" desc:"BFD: missed packets before the session is down, 1-255."`
	BFDTxInterval time.Duration `envconfig:"NOVAEDGE_BFD_TX_INTERVAL" flag:"bfd-tx-interval" default:"300ms" desc:"BFD: desired minimum transmit interval, 1ms-60s in whole microseconds."`
	BFDRxInterval time.Duration `envconfig:"NOVAEDGE_BFD_RX_INTERVAL" flag:"bfd-rx-interval" default:"300ms" desc:"BFD: required minimum receive interval, 1ms-60s in whole microseconds."`
	BFDAuth       BFDAuth       `envconfig:"NOVAEDGE_BFD_AUTH" flag:"bfd-auth" default:"none" desc:"BFD authentication: none, simple, keyed-sha1 or meticulous-sha1."`
	BFDAuthKey    string        `envconfig:"NOVAEDGE_BFD_AUTH_KEY" flag:"bfd-auth-key" secret:"true" desc:"BFD: authentication key (key id 1); 1-16 bytes for simple, 1-20 for SHA1."`

	MetricsAddr string    `envconfig:"NOVAEDGE_CP_VIP_METRICS_ADDR" flag:"metrics-addr" default:"127.0.0.1:9450" empty:"off" desc:"Listen address of /metrics, /healthz, /readyz and /status; empty = off. /status answers the node itself only (loopback, or a request from the node to its own address). The static pod written by manifest pod sets :9450 (every address of the node, for a cluster's Prometheus: docs/monitoring.md)."`
	LogFormat   LogFormat `envconfig:"NOVAEDGE_CP_VIP_LOG_FORMAT" flag:"log-format" default:"text" desc:"Log format: text or json."`
	LogLevel    LogLevel  `envconfig:"NOVAEDGE_CP_VIP_LOG_LEVEL" reload:"live" flag:"log-level" default:"info" desc:"Log level: debug, info, warn or error."`
}

// Where kubeadm and k3s put the cluster CA that signs the apiserver's
// serving certificate.
const (
	KubeadmCAFile = "/etc/kubernetes/pki/ca.crt"
	K3sCAFile     = "/var/lib/rancher/k3s/server/tls/server-ca.crt"
)

// CAFiles are the places the cluster CA is looked for, in order: the
// configured file, else kubeadm's and k3s's.
func (c *Config) CAFiles() []string {
	if c.CAFile != "" {
		return []string{c.CAFile}
	}
	return []string{KubeadmCAFile, K3sCAFile}
}

// APIServerURL is the health endpoint of the local kube-apiserver.
func (c *Config) APIServerURL() string {
	return "https://localhost:" + strconv.Itoa(int(c.APIPort)) + "/livez"
}

// APIServerReadyURL is the readiness endpoint whose shutdown check tells a
// drain; empty when drain detection is off.
func (c *Config) APIServerReadyURL() string {
	if !c.Drain {
		return ""
	}
	return "https://localhost:" + strconv.Itoa(int(c.APIPort)) + "/readyz"
}
