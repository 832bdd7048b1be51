package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	gobgp "github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/novaedge/cpvip/internal/bfd"
	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/docgen"
	"github.com/novaedge/cpvip/internal/staticpod"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// portValues are the values docs/ports.md quotes, each from where the
// daemon takes it: the configuration's defaults (the Config struct's
// tags), the protocol constants of internal/vrrp and internal/bfd, the
// static pod's metrics address, and GoBGP's BGP port (internal/bgp sets
// no port of its own: GoBGP connects to bgp.BGP_PORT unless a peer names
// another, and internal/bgp names none).
type portValues struct {
	apiPort, metricsAddr, podMetricsAddr, etcdPorts string
	mode, l2, bgpMode                               string
	vrrpProto, vrrpTTL                              int
	vrrpGroup4, vrrpGroup6                          string
	bfdPort, bfdSrcMin, bfdSrcMax, bfdTTL           int
	bgpPort                                         int
	ns, na, arpType                                 int
}

// env returns the variable's name after checking the configuration has
// it, so that a renamed variable fails the test instead of the page.
func env(t *testing.T, name string) string {
	t.Helper()
	for _, f := range config.Fields() {
		if f.Env == name {
			return "`" + name + "`"
		}
	}
	t.Fatalf("the configuration has no variable %s", name)
	return ""
}

// def returns the variable's default from the Config struct's tags.
func def(t *testing.T, name string) string {
	t.Helper()
	env(t, name)
	d := config.Default(name)
	if d == "" {
		t.Fatalf("%s has no default", name)
	}
	return d
}

func ports(t *testing.T) portValues {
	return portValues{
		apiPort:        def(t, "NOVAEDGE_CP_VIP_API_PORT"),
		metricsAddr:    def(t, "NOVAEDGE_CP_VIP_METRICS_ADDR"),
		podMetricsAddr: staticpod.PodMetricsAddr,
		etcdPorts:      def(t, "NOVAEDGE_CP_VIP_HEALTH_ETCD_PORTS"),
		mode:           def(t, "NOVAEDGE_CP_VIP_MODE"),
		l2:             string(config.ModeL2),
		bgpMode:        string(config.ModeBGP),
		vrrpProto:      vrrp.IPProtocol,
		vrrpTTL:        vrrp.TTL,
		vrrpGroup4:     vrrp.GroupV4.String(),
		vrrpGroup6:     vrrp.GroupV6.String(),
		bfdPort:        bfd.DstPort,
		bfdSrcMin:      bfd.SrcPortMin,
		bfdSrcMax:      bfd.SrcPortMax,
		bfdTTL:         bfd.TTL,
		bgpPort:        gobgp.BGP_PORT,
		ns:             int(ipv6.ICMPTypeNeighborSolicitation),
		na:             int(ipv6.ICMPTypeNeighborAdvertisement),
		arpType:        unix.ETH_P_ARP,
	}
}

// portsTable renders the table of every port and protocol the daemon uses.
func portsTable(t *testing.T, p portValues) string {
	type row struct{ traffic, proto, mode, dir, whom, setting string }
	apiPort := env(t, "NOVAEDGE_CP_VIP_API_PORT")
	rows := []row{
		{"VRRP advertisements",
			fmt.Sprintf("IP protocol %d (VRRPv3), TTL / hop limit %d sent and required", p.vrrpProto, p.vrrpTTL),
			p.l2, "out and in",
			fmt.Sprintf("the other nodes of the group: multicast to %s (IPv4, from the interface's address) and %s (IPv6, from its link-local address) on the VRRP interface; with `PEERS`, unicast to and from each peer", p.vrrpGroup4, p.vrrpGroup6),
			env(t, "NOVAEDGE_CP_VIP_PEERS") + ", " + env(t, "NOVAEDGE_CP_VIP_INTERFACE") + ", " + env(t, "NOVAEDGE_CP_VIP_VRID")},
		{"VIP announcements",
			fmt.Sprintf("ARP (EtherType 0x%04x: a gratuitous request and reply); ICMPv6 neighbour advertisement (type %d) to ff02::1", p.arpType, p.na),
			p.l2 + ", the holder", "out",
			"every host of the segment",
			env(t, "NOVAEDGE_CP_VIP_GARP_REPEAT") + ", " + env(t, "NOVAEDGE_CP_VIP_GARP_REFRESH")},
		{"address conflict check",
			fmt.Sprintf("ARP probes (sender 0.0.0.0, RFC 5227) and the replies to them; ICMPv6 neighbour solicitation (type %d) to the VIP's solicited-node group and the advertisements (type %d) that answer it", p.ns, p.na),
			p.l2 + ", `CONFLICT_CHECK` on", "out, answers in",
			"any host of the segment that answers for the VIP",
			env(t, "NOVAEDGE_CP_VIP_CONFLICT_CHECK")},
		{"health check",
			"TCP " + p.apiPort + " (HTTPS: `/readyz`, `/livez`, `/livez/ping`)",
			"both", "out, loopback",
			"the node's own apiserver, on localhost",
			apiPort},
		{"etcd's connections, on a stalled check",
			"none on the wire: the kernel's TCP socket table, read over netlink, filtered to ports " + p.etcdPorts,
			"both", "-",
			"this host",
			env(t, "NOVAEDGE_CP_VIP_HEALTH_ETCD_PORTS")},
		{"metrics and status",
			"TCP, listening on " + p.metricsAddr + "; the static pod's: " + p.podMetricsAddr + " (every address of the node)",
			"both", "in",
			"`novaedge-cpvip status` and `curl` on the node; a Prometheus, when the address is not a loopback one",
			env(t, "NOVAEDGE_CP_VIP_METRICS_ADDR") + " (empty: off)"},
		{"BGP sessions",
			fmt.Sprintf("TCP %d on the peer, from a port the kernel picks; no port listened on", p.bgpPort),
			p.bgpMode, "out (replies in)",
			"each BGP peer (a router)",
			env(t, "NOVAEDGE_BGP_PEER_ADDRESS") + ", " + env(t, "NOVAEDGE_BGP_PEERS") + "; TCP MD5: " + env(t, "NOVAEDGE_BGP_PASSWORD") + "; eBGP TTL: " + env(t, "NOVAEDGE_BGP_MULTIHOP")},
		{"BFD control packets",
			fmt.Sprintf("UDP: sent to the peer's port %d from a port in %d-%d, received on port %d (every address); TTL / hop limit %d sent and required (single hop)", p.bfdPort, p.bfdSrcMin, p.bfdSrcMax, p.bfdPort, p.bfdTTL),
			p.bgpMode + ", `BFD_ENABLED` on", "out and in",
			"each BGP peer",
			env(t, "NOVAEDGE_BFD_ENABLED")},
		{"the API through the VIP",
			"TCP " + p.apiPort + " to the VIP (the apiserver's own port: the daemon opens none for it unless it spreads)",
			"both", "in",
			"every client of the API: kubelets, kube-proxy, controllers, `kubectl`",
			apiPort},
		{"spreading: the VIP's connections",
			"TCP " + p.apiPort + " to the VIP, handed by an sk_lookup program to the daemon's listener on 127.0.0.1 / ::1 (a port the kernel picks, loopback only)",
			p.l2 + ", `SPREAD` on, the holder", "in",
			"every client of the API",
			env(t, "NOVAEDGE_CP_VIP_SPREAD") + ", " + apiPort},
		{"spreading: the other apiservers",
			"TCP " + p.apiPort + " on each backend: its health checks (HTTPS) and the connections carried to it",
			p.l2 + ", `SPREAD` on", "out",
			"the other control-plane nodes: `SPREAD_BACKENDS`, else the global addresses of `PEERS` (this node's own skipped)",
			env(t, "NOVAEDGE_CP_VIP_SPREAD_BACKENDS") + ", " + apiPort},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The mode column: `%s` or `%s` (`NOVAEDGE_CP_VIP_MODE`, default `%s`), or both.\nDefaults: `API_PORT` %s, `METRICS_ADDR` %s.\n\n",
		p.l2, p.bgpMode, p.mode, p.apiPort, p.metricsAddr)
	b.WriteString("| traffic | protocol and port | mode | direction (from this node) | to / from | set by |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.traffic, r.proto, r.mode, r.dir, r.whom, r.setting)
	}
	return b.String()
}

// firewallSnippets renders the nftables and iptables rules that let the
// table's traffic in, with the example addresses of the docs.
func firewallSnippets(p portValues) string {
	var b strings.Builder
	fmt.Fprintf(&b, "nftables, rules to merge into the input chain of your ruleset (Debian's `/etc/nftables.conf` names it\n"+
		"`inet filter`). They only accept and set no policy: the drop policy, and the rules for SSH, etcd\n"+
		"(2379-2380), the kubelet (10250) and the CNI, stay your ruleset's:\n\n```\n")
	fmt.Fprintf(&b, `table inet filter {
	set cp_nodes4 { type ipv4_addr; elements = { 192.0.2.11, 192.0.2.12, 192.0.2.13 } }
	set routers4 { type ipv4_addr; elements = { 198.51.100.1 } }
	set prometheus4 { type ipv4_addr; elements = { 203.0.113.10 } }
	chain input {
		type filter hook input priority filter;   # a fragment: your ruleset sets the policy
		ct state established,related accept   # BGP's and the health checks' replies
		iif lo accept                          # health check, status, spreading's listener
		# l2: VRRP from the other control-plane nodes (IPv6: from link-local addresses)
		ip saddr @cp_nodes4 meta l4proto %[1]d accept
		ip6 saddr fe80::/10 meta l4proto %[1]d accept
		# l2: neighbour discovery (IPv6 VIP: the conflict check's answers); ARP is not
		# filtered by ip, ip6 or inet tables
		icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept
		# the API through the VIP; with SPREAD also from the holder to every apiserver
		tcp dport %[2]s accept
		# bgp with BFD: the routers' control packets
		ip saddr @routers4 udp dport %[3]d accept
		# metrics beyond loopback (the static pod listens on %[4]s)
		ip saddr @prometheus4 tcp dport %[5]s accept
	}
}
`, p.vrrpProto, p.apiPort, p.bfdPort, p.podMetricsAddr, strings.TrimPrefix(p.podMetricsAddr, ":"))
	fmt.Fprintf(&b, "```\n\niptables and ip6tables, the same rules appended to `INPUT` (before any final drop rule of yours):\n\n```\n")
	fmt.Fprintf(&b, `iptables  -A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
ip6tables -A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
iptables  -A INPUT -i lo -j ACCEPT
ip6tables -A INPUT -i lo -j ACCEPT
iptables  -A INPUT -p %[1]d -s 192.0.2.11,192.0.2.12,192.0.2.13 -j ACCEPT
ip6tables -A INPUT -p %[1]d -s fe80::/10 -j ACCEPT
ip6tables -A INPUT -p ipv6-icmp --icmpv6-type neighbour-solicitation -j ACCEPT
ip6tables -A INPUT -p ipv6-icmp --icmpv6-type neighbour-advertisement -j ACCEPT
iptables  -A INPUT -p tcp --dport %[2]s -j ACCEPT
ip6tables -A INPUT -p tcp --dport %[2]s -j ACCEPT
iptables  -A INPUT -p udp --dport %[3]d -s 198.51.100.1 -j ACCEPT
iptables  -A INPUT -p tcp --dport %[4]s -s 203.0.113.10 -j ACCEPT
`, p.vrrpProto, p.apiPort, p.bfdPort, strings.TrimPrefix(p.podMetricsAddr, ":"))
	fmt.Fprintf(&b, "```\n\nOn the router (bgp mode), let the nodes in: BGP and, with BFD, its control packets:\n\n```\n")
	fmt.Fprintf(&b, `# nftables
ip saddr { 198.51.100.11, 198.51.100.12, 198.51.100.13 } tcp dport %[1]d accept
ip saddr { 198.51.100.11, 198.51.100.12, 198.51.100.13 } udp dport %[2]d accept
# iptables
iptables -A INPUT -p tcp --dport %[1]d -s 198.51.100.11,198.51.100.12,198.51.100.13 -j ACCEPT
iptables -A INPUT -p udp --dport %[2]d -s 198.51.100.11,198.51.100.12,198.51.100.13 -j ACCEPT
`, p.bgpPort, p.bfdPort)
	b.WriteString("```\n")
	return b.String()
}

// TestPortsReference keeps docs/ports.md in step with the code: the
// configuration's defaults and the protocols' constants
// (go test ./cmd/novaedge-cpvip -run TestPortsReference -update).
func TestPortsReference(t *testing.T) {
	p := ports(t)
	path := filepath.Join("..", "..", "docs", "ports.md")
	how := "go test ./cmd/novaedge-cpvip -run TestPortsReference -update"
	if err := docgen.Check(path, "<!-- BEGIN GENERATED: ports -->\n", "<!-- END GENERATED: ports -->\n",
		portsTable(t, p), *updateDocs, how); err != nil {
		t.Fatal(err)
	}
	if err := docgen.Check(path, "<!-- BEGIN GENERATED: firewall -->\n", "<!-- END GENERATED: firewall -->\n",
		firewallSnippets(p), *updateDocs, how); err != nil {
		t.Fatal(err)
	}
}
