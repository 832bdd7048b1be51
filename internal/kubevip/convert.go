package kubevip

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/novaedge/cpvip/internal/config"
	"sigs.k8s.io/yaml"
)

// Result is a converted configuration.
type Result struct {
	Vars    map[string]string // our variables
	Dropped []string          // one line per kube-vip setting we do not take, with why
	Notes   []string          // things the operator should know
	Source  string            // which container of which object
}

type manifest struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Containers []container `json:"containers"`
		Template   struct {
			Spec struct {
				Containers []container `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type container struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	Env   []struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		ValueFrom any    `json:"valueFrom"`
	} `json:"env"`
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// Convert reads the first kube-vip container of a Pod or DaemonSet in data
// (several YAML documents allowed) and converts its environment.
func Convert(data []byte) (*Result, error) {
	if len(data) > 4<<20 {
		return nil, errors.New("manifest larger than 4 MiB")
	}
	for _, doc := range docSeparator.Split(string(data), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var m manifest
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, fmt.Errorf("parsing YAML: %w", err)
		}
		containers := m.Spec.Containers
		if m.Kind != "Pod" {
			containers = m.Spec.Template.Spec.Containers
		}
		for _, c := range containers {
			if strings.Contains(c.Image, "kube-vip") || c.Name == "kube-vip" {
				env := map[string]string{}
				r := &Result{Vars: map[string]string{}, Source: fmt.Sprintf("%s %s, container %s (%s)", m.Kind, m.Metadata.Name, c.Name, c.Image)}
				for _, e := range c.Env {
					if e.ValueFrom != nil {
						why := "valueFrom (a Secret or field reference) cannot be read from the manifest: set its value by hand"
						if e.Name == "vip_nodename" {
							why = "not needed: VRRP tells nodes apart by their own addresses"
						}
						r.Dropped = append(r.Dropped, e.Name+": "+why)
						continue
					}
					env[e.Name] = e.Value
				}
				if err := r.convert(env); err != nil {
					return nil, err
				}
				return r, nil
			}
		}
	}
	return nil, errors.New("no kube-vip container found (looked for a container named kube-vip or with a kube-vip image in Pods and DaemonSets)")
}

func (r *Result) convert(env map[string]string) error {
	take := func(name string) (string, bool) {
		v, ok := env[name]
		delete(env, name)
		return v, ok
	}
	addr, ok := take("address")
	if alt, ok2 := take("vip_address"); !ok || addr == "" {
		addr, ok = alt, ok2
	}
	if !ok || addr == "" {
		return errors.New("the kube-vip container sets neither address nor vip_address")
	}
	bits := ""
	for _, n := range []string{"vip_cidr", "vip_subnet"} {
		if v, ok := take(n); ok && bits == "" {
			bits = strings.TrimPrefix(v, "/")
		}
	}
	vips, err := vipList(addr, bits)
	if err != nil {
		return err
	}
	r.Vars["NOVAEDGE_CP_VIP_ADDRESS"] = vips
	if v, ok := take("vip_interface"); ok && v != "" {
		r.Vars["NOVAEDGE_CP_VIP_INTERFACE"] = v
	}
	if v, ok := take("port"); ok && v != "" {
		r.Vars["NOVAEDGE_CP_VIP_API_PORT"] = v
	}
	if v, _ := take("bgp_enable"); v == "true" {
		if err := r.bgp(take); err != nil {
			return err
		}
	} else {
		r.Notes = append(r.Notes, "L2 mode: the nodes elect the holder with VRRPv3 (VRID "+config.Default("NOVAEDGE_CP_VIP_VRID")+"); use the same NOVAEDGE_CP_VIP_VRID on every node and one no other VRRP group on the segment uses")
	}
	take("vip_arp")
	take("cp_enable")
	r.health(take)
	r.logLevel(take)
	r.dropRest(env)
	return nil
}

// vipList turns kube-vip's address (one or a comma list) and cidr into prefixes.
func vipList(addr, bits string) (string, error) {
	var out []string
	for _, a := range strings.Split(addr, ",") {
		a = strings.TrimSpace(a)
		if strings.Contains(a, "/") {
			out = append(out, a)
			continue
		}
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return "", fmt.Errorf("address %q is not an IP address (a DNS name is not supported: the VIP must exist before the API does)", a)
		}
		b := bits
		if b == "" || (ip.Is6() && b == "32") {
			b = strconv.Itoa(ip.BitLen())
		}
		out = append(out, ip.String()+"/"+b)
	}
	return strings.Join(out, ","), nil
}

func (r *Result) bgp(take func(string) (string, bool)) error {
	r.Vars["NOVAEDGE_CP_VIP_MODE"] = "bgp"
	if v, ok := take("bgp_as"); ok {
		r.Vars["NOVAEDGE_BGP_LOCAL_AS"] = v
	}
	if v, ok := take("bgp_routerid"); ok {
		r.Vars["NOVAEDGE_BGP_ROUTER_ID"] = v
	}
	if v, ok := take("bgp_hold_time"); ok && v != "" {
		r.Vars["NOVAEDGE_BGP_HOLD_TIME"] = strings.TrimSuffix(v, "s") + "s"
	}
	if _, ok := take("bgp_keepalive_interval"); ok {
		r.Dropped = append(r.Dropped, "bgp_keepalive_interval: the keepalive is always a third of the hold time")
	}
	pass, _ := take("bgp_peerpass")
	if peers, ok := take("bgp_peers"); ok && peers != "" {
		list, pw, multihop, err := parsePeers(peers)
		if err != nil {
			return err
		}
		r.Vars["NOVAEDGE_BGP_PEERS"] = list
		if pw != "" {
			pass = pw
		}
		if multihop {
			r.Vars["NOVAEDGE_BGP_MULTIHOP"] = "255"
			r.Notes = append(r.Notes, "a kube-vip peer had multihop on: NOVAEDGE_BGP_MULTIHOP=255 allows any distance; lower it to the real hop count")
		}
		take("bgp_peeraddress")
		take("bgp_peeras")
	} else {
		if v, ok := take("bgp_peeraddress"); ok {
			r.Vars["NOVAEDGE_BGP_PEER_ADDRESS"] = v
		}
		if v, ok := take("bgp_peeras"); ok {
			r.Vars["NOVAEDGE_BGP_PEER_AS"] = v
		}
	}
	if pass != "" {
		r.Vars["NOVAEDGE_BGP_PASSWORD"] = pass
		r.Notes = append(r.Notes, "the BGP password is in the output: keep the env file readable by root only (mode 0600)")
	}
	for _, n := range []string{"bgp_source_if", "bgp_source_ip"} {
		if _, ok := take(n); ok {
			r.Dropped = append(r.Dropped, n+": the session's source is the address of the route to the peer")
		}
	}
	return nil
}

// parsePeers reads kube-vip's bgp_peers: ADDR:AS[:PASSWORD[:MULTIHOP]] separated
// by commas, IPv6 addresses in brackets.
func parsePeers(s string) (list, password string, multihop bool, err error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		addr, rest := p, ""
		if strings.HasPrefix(p, "[") {
			end := strings.Index(p, "]")
			if end < 0 {
				return "", "", false, fmt.Errorf("bgp_peers entry %q: unclosed [", p)
			}
			addr, rest = p[1:end], strings.TrimPrefix(p[end+1:], ":")
		} else if i := strings.Index(p, ":"); i >= 0 {
			addr, rest = p[:i], p[i+1:]
		}
		fields := strings.SplitN(rest, ":", 3)
		if fields[0] == "" {
			return "", "", false, fmt.Errorf("bgp_peers entry %q: want ADDRESS:AS", p)
		}
		peer, perr := config.ParseBGPPeer(addr + "@" + fields[0])
		if perr != nil {
			return "", "", false, fmt.Errorf("bgp_peers entry %q: %w", p, perr)
		}
		out = append(out, peer.String())
		if len(fields) > 1 && fields[1] != "" {
			password = fields[1]
		}
		if len(fields) > 2 && fields[2] == "true" {
			multihop = true
		}
	}
	return strings.Join(out, ","), password, multihop, nil
}

func (r *Result) health(take func(string) (string, bool)) {
	for name, ours := range map[string]string{
		"control_plane_health_check_timeout":  "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT",
		"control_plane_health_check_interval": "NOVAEDGE_CP_VIP_HEALTH_INTERVAL",
		"control_plane_health_check_period":   "NOVAEDGE_CP_VIP_HEALTH_INTERVAL",
	} {
		if v, ok := take(name); ok && v != "" {
			if _, err := strconv.Atoi(v); err == nil {
				v += "s"
			}
			r.Vars[ours] = v
		}
	}
}

func (r *Result) logLevel(take func(string) (string, bool)) {
	v, ok := take("vip_loglevel")
	if !ok {
		return
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		r.Dropped = append(r.Dropped, "vip_loglevel="+v+": not a number")
	case n >= 5:
		r.Vars["NOVAEDGE_CP_VIP_LOG_LEVEL"] = "debug"
	case n == 4:
		r.Vars["NOVAEDGE_CP_VIP_LOG_LEVEL"] = "info"
	case n == 3:
		r.Vars["NOVAEDGE_CP_VIP_LOG_LEVEL"] = "warn"
	default:
		r.Vars["NOVAEDGE_CP_VIP_LOG_LEVEL"] = "error"
	}
}

// dropReason explains, by prefix, why a setting is dropped.
func dropReason(name string) string {
	noLease := "no leases: the nodes elect the holder with VRRP, with no Kubernetes API"
	noDNS := "dynamic DNS for the VIP is not supported: the VIP is a static address"
	for _, w := range []struct{ prefix, reason string }{
		{"svc_", "Service load-balancing is not our job: we give the control plane its VIP only"},
		{"lb_", "IPVS load-balancing is not our job: the apiservers take connections directly"},
		{"vip_leaderelection", noLease}, {"vip_lease", noLease}, {"vip_renewdeadline", noLease},
		{"vip_retryperiod", "no leases: election timing is NOVAEDGE_CP_VIP_ADVERT_INTERVAL"},
		{"cp_namespace", "no Kubernetes API is used"}, {"KUBERNETES_", "no Kubernetes API is used"},
		{"vip_ddns", noDNS}, {"dns_mode", noDNS},
		{"prometheus_server", "metrics are on NOVAEDGE_CP_VIP_METRICS_ADDR, loopback by default (127.0.0.1:9450)"},
		{"enable_", "kube-vip feature without an equivalent here"},
		{"egress_", "egress NAT is not our job"},
	} {
		if strings.HasPrefix(name, w.prefix) {
			return w.reason
		}
	}
	return "no equivalent in novaedge-cpvip"
}

func (r *Result) dropRest(env map[string]string) {
	names := make([]string, 0, len(env))
	for n := range env {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.Dropped = append(r.Dropped, n+"="+redact(n, env[n])+": "+dropReason(n))
	}
}

func redact(name, v string) string {
	if strings.Contains(strings.ToLower(name), "pass") || strings.Contains(strings.ToLower(name), "token") {
		return "<redacted>"
	}
	return v
}

// EnvFile renders the variables as an env file with a header naming the source.
func (r *Result) EnvFile(file string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# novaedge-cpvip configuration converted from kube-vip\n# source: %s, %s\n", file, r.Source)
	fmt.Fprintf(&b, "# check it: novaedge-cpvip check-config --env-file /etc/novaedge/cpvip.env\n")
	for _, f := range config.Fields() {
		if v, ok := r.Vars[f.Env]; ok {
			fmt.Fprintf(&b, "%s=%s\n", f.Env, quote(v))
		}
	}
	return b.Bytes()
}

func quote(v string) string {
	if strings.ContainsAny(v, " #;\"'\\") {
		return strconv.Quote(v)
	}
	return v
}
