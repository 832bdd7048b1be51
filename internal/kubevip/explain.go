package kubevip

import (
	"fmt"
	"strings"
)

// explain says what the switch takes away and what it brings, from the
// kube-vip settings in env (before convert consumes them), and writes the
// migration steps that fit the manifest (docs/migrate-from-kube-vip.md).
func (r *Result) explain(env map[string]string, kind string) {
	on := func(name string) bool { return env[name] == "true" }
	bgp := on("bgp_enable")
	if on("lb_enable") {
		r.Lost = append(r.Lost, "lb_enable: kube-vip's IPVS load-balancing of the VIP across every apiserver "+
			"(port "+orDefault(env["lb_port"], "6443")+"): here the holder's apiserver takes every connection "+
			"(L2), or the router spreads them (BGP ECMP)")
	}
	if on("svc_enable") {
		r.Lost = append(r.Lost, "svc_enable: LoadBalancer Services get no address from us: keep kube-vip as a "+
			"Services-only DaemonSet (svc_enable=true, cp_enable=false) or use MetalLB or a cloud controller")
	}
	if on("vip_leaderelection") && on("cp_enable") && !bgp {
		r.Lost = append(r.Lost, "vip_leaderelection with cp_enable: the holder is no longer a Lease in kube-system "+
			"(kubectl get lease plndr-cp-lock): ask novaedge-cpvip status or the vip_held metric")
		r.Gained = append(r.Gained, "the election needs no Kubernetes API: the VIP exists before the cluster does "+
			"(kubeadm init), and stays while the API is down (etcd quorum lost)")
	}
	r.Gained = append(r.Gained,
		"fail open: a health failure every node shares (etcd quorum, a bad token everywhere) never takes the VIP away",
		"the local apiserver's /readyz and /livez decide, over TLS verified against the cluster CA; a draining apiserver hands the VIP over before its port closes")
	if !bgp {
		r.Gained = append(r.Gained, "a takeover in about 0.7 s at the defaults (NOVAEDGE_CP_VIP_ADVERT_INTERVAL=200ms, 2 advertisements "+
			"an interval: a false takeover needs 7 lost in a row; kube-vip's Lease takes vip_leaseduration, 5-15 s), "+
			"our own daemon's restart moves nothing (NOVAEDGE_CP_VIP_RESTART_WAIT), "+
			"with no API round trip; the VIP is never bound while another host answers for it")
	} else {
		r.Gained = append(r.Gained, "an unhealthy node's route is demoted, not withdrawn, while no node is healthy; BFD for sub-second failure detection (NOVAEDGE_BFD_ENABLED)")
	}
	r.Steps = steps(bgp, kind)
}

// steps is the node-by-node procedure of docs/migrate-from-kube-vip.md.
func steps(bgp bool, kind string) []string {
	remove := "sudo mv /etc/kubernetes/manifests/kube-vip.yaml /root/   # the kubelet stops kube-vip (SIGTERM: it drops the VIP and its Lease)"
	s := []string{
		"on every control-plane node: install the package (or the image) and this file as /etc/novaedge/cpvip.env (as the package installs it: root:novaedge-cpvip, mode 0640); do not start it yet",
		"  sudo novaedge-cpvip check-config --env-file /etc/novaedge/cpvip.env",
	}
	if kind == "DaemonSet" {
		remove = "kubectl label node <node> novaedge-cpvip/migrated=true   # kube-vip's pod leaves this node"
		s = append(s, "add to kube-vip's DaemonSet a node affinity term: key novaedge-cpvip/migrated, operator DoesNotExist")
	}
	if bgp {
		return append(s,
			"node by node, in any order:",
			"  sudo systemctl enable --now novaedge-cpvip   # binds the VIP on lo; its BGP session waits: the router takes one session per neighbour address, kube-vip's for now",
			"  "+remove,
			"  novaedge-cpvip status   # the peer established within seconds; the router has this node's path again (vtysh -c 'show ip bgp <VIP>/32'); the other nodes' paths carried the traffic meanwhile",
			"when no node runs kube-vip: delete kube-vip's RBAC and ServiceAccount")
	}
	return append(s,
		"find kube-vip's leader: kubectl -n kube-system get lease plndr-cp-lock -o jsonpath='{.spec.holderIdentity}'",
		"node by node, the leader last:",
		"  "+remove,
		"  sudo systemctl enable --now novaedge-cpvip",
		"  novaedge-cpvip status   # backup while kube-vip holds the VIP; a master logs 'Another host answers for the VIP' with kube-vip's MAC and does not bind it",
		"on the leader last: as above; kube-vip releases the VIP as it stops and our master binds it within a second (one short gap, no two holders)",
		"when no node runs kube-vip: kubectl -n kube-system delete lease plndr-cp-lock, kube-vip's RBAC and ServiceAccount")
}

func orDefault(v, d string) string {
	if strings.TrimSpace(v) == "" {
		return d
	}
	return v
}

// Explanation renders what is lost and gained, and the steps, for stderr.
func (r *Result) Explanation() string {
	var b strings.Builder
	for _, l := range r.Lost {
		fmt.Fprintf(&b, "you lose: %s\n", l)
	}
	for _, g := range r.Gained {
		fmt.Fprintf(&b, "you gain: %s\n", g)
	}
	if len(r.Steps) > 0 {
		b.WriteString("\nMigration, with no moment of two holders (docs/migrate-from-kube-vip.md):\n")
		for _, s := range r.Steps {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	return b.String()
}
