package kubevip

import (
	"fmt"
	"strings"
)

// Var is one of kube-vip's environment variables and what the converter
// makes of it: the variable of ours it sets, or why it is dropped.
type Var struct {
	Name string // kube-vip's name
	Ours string // our variable it sets; empty when it is dropped
	Why  string // how it maps, or why it is dropped
}

// Dropped reports whether the converter drops the variable.
func (v Var) Dropped() bool { return v.Ours == "" }

// Reasons shared by several dropped variables.
const (
	noLease   = "no leases: the nodes elect the holder with VRRP, with no Kubernetes API"
	noAPI     = "no Kubernetes API is used"
	noService = "Service load-balancing is not our job: we give the control plane its VIP only"
	noEgress  = "egress NAT is not our job"
	noDNS     = "dynamic DNS for the VIP is not supported: the VIP is a static address"
	noRouting = "routing-table mode is not supported: L2 binds the VIP on the interface, BGP announces it"
	noZebra   = "Zebra (FRR) integration is not used: the embedded GoBGP speaker talks BGP itself"
	noMetal   = "Equinix Metal's API is not used"
	autoMPBGP = "an IPv6 VIP with no IPv6 peer goes over the IPv4 sessions (MP-BGP) by itself, next hop the IPv6 address of the interface toward each peer (kube-vip's auto_sourceif)"
)

// Vars is every environment variable kube-vip v1.2 reads, as its
// pkg/kubevip/config_envvar.go declares them (the variables of the
// releases before it included) and the control-plane health check that
// v1.2 added. A test fails when one has neither a variable of ours nor a
// reason; the converter reports a name not in this list as unknown.
var Vars = []Var{
	{"address", "NOVAEDGE_CP_VIP_ADDRESS", "one IPv4 and/or one IPv6 address (a DNS name is refused: the VIP must exist before any DNS does)"},
	{"vip_address", "NOVAEDGE_CP_VIP_ADDRESS", "the older name of address"},
	{"vip_cidr", "NOVAEDGE_CP_VIP_ADDRESS", "the prefix length: \"32,128\" is IPv4's then IPv6's; one value serves both (32 for an IPv6 VIP means /128)"},
	{"vip_subnet", "NOVAEDGE_CP_VIP_ADDRESS", "as vip_cidr"},
	{"vip_interface", "NOVAEDGE_CP_VIP_INTERFACE", ""},
	{"port", "NOVAEDGE_CP_VIP_API_PORT", ""},
	{"vip_arp", "NOVAEDGE_CP_VIP_MODE", "l2 (VRRP election, gratuitous ARP / NA) unless bgp_enable is true"},
	{"vip_arpRate", "NOVAEDGE_CP_VIP_GARP_REFRESH", "milliseconds between gratuitous ARPs; at least 1s here"},
	{"cp_enable", "NOVAEDGE_CP_VIP_ADDRESS", "the control-plane VIP is all novaedge-cpvip does"},
	{"vip_loglevel", "NOVAEDGE_CP_VIP_LOG_LEVEL", "5 and more: debug, 4: info, 3: warn, less: error"},
	{"bgp_enable", "NOVAEDGE_CP_VIP_MODE", "true: bgp"},
	{"bgp_as", "NOVAEDGE_BGP_LOCAL_AS", ""},
	{"bgp_routerid", "NOVAEDGE_BGP_ROUTER_ID", ""},
	{"bgp_peeraddress", "NOVAEDGE_BGP_PEER_ADDRESS", "ignored when bgp_peers is set, as kube-vip does"},
	{"bgp_peeras", "NOVAEDGE_BGP_PEER_AS", ""},
	{"bgp_peerpass", "NOVAEDGE_BGP_PASSWORD", "the password of every peer without one of its own"},
	{"bgp_peers", "NOVAEDGE_BGP_PEERS", "ADDR:AS[:PASSWORD[:MULTIHOP]] entries become ADDR@AS?password=P&multihop=255, each peer with its own options"},
	{"bgp_multihop", "NOVAEDGE_BGP_MULTIHOP", "true: 255 (any distance); lower it to the real hop count"},
	{"bgp_hold_time", "NOVAEDGE_BGP_HOLD_TIME", "seconds"},
	{"bgp_keepalive_interval", "", "the keepalive is always a third of the hold time"},
	{"bgp_sourceif", "", "the session's source is the address of the route to the peer"},
	{"bgp_sourceip", "", "the session's source is the address of the route to the peer"},
	{"bgp_routerinterface", "", "set NOVAEDGE_BGP_ROUTER_ID to the node's IPv4 address"},
	{"control_plane_health_check_address", "NOVAEDGE_CP_VIP_API_PORT", "the port of the local apiserver URL; we always check /readyz and /livez on localhost"},
	{"control_plane_health_check_period_seconds", "NOVAEDGE_CP_VIP_HEALTH_INTERVAL", "seconds"},
	{"control_plane_health_check_timeout_seconds", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT", "seconds"},
	{"control_plane_health_check_failure_threshold", "NOVAEDGE_CP_VIP_FAIL_THRESHOLD", ""},
	{"control_plane_health_check_ca_path", "NOVAEDGE_CP_VIP_CA_FILE", ""},
	{"vip_nodename", "", "not needed: VRRP tells nodes apart by their own addresses"},
	{"vip_leaderelection", "", noLease},
	{"vip_leasename", "", noLease},
	{"vip_leaseduration", "", noLease},
	{"vip_renewdeadline", "", noLease},
	{"vip_retryperiod", "", "no leases: election timing is NOVAEDGE_CP_VIP_ADVERT_INTERVAL"},
	{"vip_leaseannotations", "", noLease},
	{"vip_singlenode", "", "a single node simply wins the election"},
	{"vip_startleader", "", "no leader is chosen by hand: the election decides (NOVAEDGE_CP_VIP_PRIORITY orders it)"},
	{"vip_interfaceloglobal", "", "the VIP on lo (BGP) is always bound as a host address"},
	{"vip_servicesinterface", "", noService},
	{"vip_ddns", "", noDNS},
	{"dns_mode", "", noDNS},
	{"annotation", "", "BGP settings come from the configuration, not from node annotations"},
	{"vip_wireguard", "", "WireGuard mode is not supported"},
	{"vip_routingtable", "", noRouting},
	{"vip_routingtableid", "", noRouting},
	{"vip_routingtabletype", "", noRouting},
	{"vip_routingprotocol", "", noRouting},
	{"vip_cleanroutingtable", "", noRouting},
	{"zebra_enable", "", noZebra},
	{"zebra_url", "", noZebra},
	{"zebra_version", "", noZebra},
	{"zebra_software_name", "", noZebra},
	{"mpbgp_nexthop", "NOVAEDGE_BGP_NEXT_HOP", "fixed: mpbgp_ipv6 is the next hop; otherwise dropped: " + autoMPBGP},
	{"mpbgp_ipv4", "", "IPv4 routes go over IPv4 sessions only, with the session's address as next hop"},
	{"mpbgp_ipv6", "NOVAEDGE_BGP_NEXT_HOP", "with mpbgp_nexthop=fixed: the IPv6 next hop of the IPv6 VIP over IPv4 sessions"},
	{"cp_namespace", "", noAPI},
	{"cp_detect", "", "the apiserver is always checked on localhost:NOVAEDGE_CP_VIP_API_PORT"},
	{"kubernetes_addr", "", noAPI},
	{"k8s_config_file", "", noAPI},
	{"svc_enable", "", noService},
	{"svc_namespace", "", noService},
	{"svc_election", "", noService},
	{"svc_leasename", "", noService},
	{"lb_class_only", "", noService},
	{"lb_class_name", "", noService},
	{"lb_class_legacy_handling", "", noService},
	{"lb_enable", "", "IPVS load-balancing is not our job: the apiservers take connections directly"},
	{"lb_port", "", "IPVS load-balancing is not our job: the apiservers take connections directly"},
	{"lb_fwdmethod", "", "IPVS load-balancing is not our job: the apiservers take connections directly"},
	{"enable_service_security", "", noService},
	{"enable_node_labeling", "", "nodes are not labelled: `novaedge-cpvip status` and the vip_held metric tell the holder"},
	{"enable_endpoints", "", noService},
	{"enable_upnp", "", noService},
	{"disable_service_updates", "", noService},
	{"backend_health_check_interval", "", noService},
	{"health_check_port", "", "our own health endpoints are on NOVAEDGE_CP_VIP_METRICS_ADDR (/healthz, /readyz)"},
	{"mirror_dest_interface", "", noService},
	{"iptables_backend", "", noEgress},
	{"egress_podcidr", "", noEgress},
	{"egress_servicecidr", "", noEgress},
	{"egress_withnftables", "", noEgress},
	{"egress_clean", "", noEgress},
	{"prometheus_server", "", "metrics are on NOVAEDGE_CP_VIP_METRICS_ADDR, loopback by default (127.0.0.1:9450)"},
	{"config_file", "", "kube-vip's own configuration file is not read: convert the manifest that sets the variables"},
	{"provider_config", "", noMetal},
	{"vip_packet", "", noMetal},
	{"vip_packetproject", "", noMetal},
	{"vip_packetprojectid", "", noMetal},
	{"PACKET_AUTH_TOKEN", "", noMetal},
}

// lookupVar finds kube-vip's variable name.
func lookupVar(name string) (Var, bool) {
	for _, v := range Vars {
		if v.Name == name {
			return v, true
		}
	}
	return Var{}, false
}

// Table renders Vars as the Markdown table of docs/migrate-from-kube-vip.md.
func Table() string {
	var b strings.Builder
	b.WriteString("| kube-vip | novaedge-cpvip | how, or why not |\n|---|---|---|\n")
	for _, v := range Vars {
		ours := "dropped"
		if !v.Dropped() {
			ours = "`" + v.Ours + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, ours, strings.ReplaceAll(v.Why, "|", "\\|"))
	}
	return b.String()
}
