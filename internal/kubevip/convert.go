package kubevip

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"sigs.k8s.io/yaml"
)

// Result is a converted configuration.
type Result struct {
	Vars    map[string]string // our variables
	Dropped []string          // one line per kube-vip setting we do not take, with why
	Notes   []string          // things the operator should know
	Lost    []string          // kube-vip features the switch takes away
	Gained  []string          // what the switch brings
	Steps   []string          // the migration procedure for this manifest
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
				r.explain(maps.Clone(env), m.Kind)
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
			bits = v
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
	if v, ok := take("vip_arpRate"); ok && v != "" {
		r.garpRate(v)
	}
	if err := r.health(take); err != nil {
		return err
	}
	r.logLevel(take)
	r.dropRest(env)
	return nil
}

// garpRate turns kube-vip's gratuitous ARP period (milliseconds) into ours.
func (r *Result) garpRate(v string) {
	ms, err := strconv.Atoi(v)
	if err != nil || ms <= 0 {
		r.Dropped = append(r.Dropped, "vip_arpRate="+v+": not a number of milliseconds")
		return
	}
	d := time.Duration(ms) * time.Millisecond
	if d < time.Second {
		r.Notes = append(r.Notes, fmt.Sprintf("vip_arpRate=%s: gratuitous ARP refresh raised to the minimum of 1s", v))
		d = time.Second
	}
	r.Vars["NOVAEDGE_CP_VIP_GARP_REFRESH"] = d.String()
}

// vipList turns kube-vip's address (one address or an IPv4,IPv6 pair) and
// vip_cidr / vip_subnet into prefixes. The masks are read as kube-vip
// reads them: "32,128" is the IPv4 mask then the IPv6 one; a single mask
// serves both, except that 32 (kube-vip's default) means /128 for IPv6.
func vipList(addr, bits string) (string, error) {
	masks := strings.Split(strings.ReplaceAll(strings.ReplaceAll(bits, "/", ""), " ", ""), ",")
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
		b := masks[0]
		if ip.Is6() && len(masks) > 1 {
			b = masks[1]
		}
		if b == "" || (ip.Is6() && b == "32" && len(masks) == 1) {
			b = strconv.Itoa(ip.BitLen())
		}
		if n, err := strconv.Atoi(b); err != nil || n < 0 || n > ip.BitLen() {
			return "", fmt.Errorf("vip_cidr / vip_subnet %q: %q is not a prefix length for %s", bits, b, ip)
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
	pass, _ := take("bgp_peerpass")
	if v, ok := take("bgp_multihop"); ok && v == "true" {
		r.Vars["NOVAEDGE_BGP_MULTIHOP"] = "255"
		r.Notes = append(r.Notes, "bgp_multihop=true: NOVAEDGE_BGP_MULTIHOP=255 allows any distance; lower it to the real hop count")
	}
	if peers, ok := take("bgp_peers"); ok && peers != "" {
		list, err := parsePeers(peers)
		if err != nil {
			return err
		}
		r.Vars["NOVAEDGE_BGP_PEERS"] = list.Syntax()
		for _, p := range list {
			if p.Multihop > 0 {
				r.Notes = append(r.Notes, "a kube-vip peer had multihop on: multihop=255 allows any distance; lower it to the real hop count")
				break
			}
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
	}
	r.mpbgp(take)
	if pass != "" || strings.Contains(r.Vars["NOVAEDGE_BGP_PEERS"], "password=") {
		r.Notes = append(r.Notes, "BGP passwords are in the output: keep the env file readable by root and the service's group only (root:novaedge-cpvip, mode 0640, as the package installs it)")
	}
	return nil
}

// mpbgp maps kube-vip's fixed IPv6 next hop for IPv6 routes over IPv4
// sessions; its automatic modes are what we do anyway.
func (r *Result) mpbgp(take func(string) (string, bool)) {
	mode, hasMode := take("mpbgp_nexthop")
	v6, _ := take("mpbgp_ipv6")
	switch {
	case mode == "fixed" && v6 != "":
		r.Vars["NOVAEDGE_BGP_NEXT_HOP"] = v6
		return
	case v6 != "":
		r.Dropped = append(r.Dropped, "mpbgp_ipv6="+v6+": used only with mpbgp_nexthop=fixed")
	}
	if hasMode {
		r.drop("mpbgp_nexthop", mode)
	}
}

// parsePeers reads kube-vip's bgp_peers: ADDR:AS[:PASSWORD[:MULTIHOP]]
// separated by commas, IPv6 addresses in brackets; each peer keeps its own
// password and multihop.
func parsePeers(s string) (config.PeerList, error) {
	var out config.PeerList
	password := false // an entry before had one: a ',' inside it made the next "entries"
	for n, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		peer, hasPassword, err := parsePeer(p)
		switch {
		case err != nil && password:
			return nil, fmt.Errorf("bgp_peers entry %d, after a password, does not parse (not repeated: it may be part of the password, which must not hold ',')", n+1)
		case err != nil:
			return nil, err
		}
		password = password || hasPassword
		out = append(out, peer)
	}
	return out, nil
}

// parsePeer reads one bgp_peers entry and says whether it has a password
// field (empty or not: a ',' right after the ':' may be the password's).
func parsePeer(p string) (config.BGPPeer, bool, error) {
	addr, rest := p, ""
	if strings.HasPrefix(p, "[") {
		end := strings.Index(p, "]")
		if end < 0 {
			return config.BGPPeer{}, false, fmt.Errorf("bgp_peers entry %q: unclosed [", redactEntry(p))
		}
		addr, rest = p[1:end], strings.TrimPrefix(p[end+1:], ":")
	} else if i := strings.Index(p, ":"); i >= 0 {
		addr, rest = p[:i], p[i+1:]
	}
	fields := strings.SplitN(rest, ":", 3)
	if fields[0] == "" {
		return config.BGPPeer{}, false, fmt.Errorf("bgp_peers entry %q: want ADDRESS:AS", redactEntry(p))
	}
	peer, err := config.ParseBGPPeer(addr + "@" + fields[0])
	if err != nil {
		return config.BGPPeer{}, false, fmt.Errorf("bgp_peers entry %q: %w", redactEntry(p), err)
	}
	if len(fields) > 1 {
		peer.Password = fields[1]
	}
	if len(fields) > 2 && fields[2] == "true" {
		peer.Multihop = 255
	}
	return peer, len(fields) > 1, nil
}

// redactEntry hides the password field of a bgp_peers entry and everything after it.
func redactEntry(p string) string {
	head, rest := p, ""
	if strings.HasPrefix(p, "[") {
		if end := strings.Index(p, "]"); end >= 0 {
			head, rest = p[:end+1], p[end+1:]
		}
	} else if i := strings.Index(p, ":"); i >= 0 {
		head, rest = p[:i], p[i:]
	}
	// "", AS, then the password and what follows it: all hidden, for a ':'
	// inside the password leaves no way to tell where it ends.
	f := strings.SplitN(rest, ":", 3)
	if len(f) > 2 && f[2] != "" {
		f[2] = "<redacted>"
	}
	return head + strings.Join(f, ":")
}

func (r *Result) health(take func(string) (string, bool)) error {
	for _, h := range []struct{ name, ours string }{
		{"control_plane_health_check_period_seconds", "NOVAEDGE_CP_VIP_HEALTH_INTERVAL"},
		{"control_plane_health_check_timeout_seconds", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT"},
	} {
		if v, ok := take(h.name); ok && v != "" {
			if _, err := strconv.Atoi(v); err != nil {
				return fmt.Errorf("%s=%q: want a number of seconds", h.name, v)
			}
			r.Vars[h.ours] = v + "s"
		}
	}
	if v, ok := take("control_plane_health_check_failure_threshold"); ok && v != "" {
		r.Vars["NOVAEDGE_CP_VIP_FAIL_THRESHOLD"] = v
	}
	if v, ok := take("control_plane_health_check_ca_path"); ok && v != "" {
		r.Vars["NOVAEDGE_CP_VIP_CA_FILE"] = v
	}
	if v, ok := take("control_plane_health_check_address"); ok && v != "" {
		u, err := url.Parse(v)
		if err != nil || u.Port() == "" {
			return fmt.Errorf("control_plane_health_check_address=%q: want https://HOST:PORT/PATH", v)
		}
		if host := u.Hostname(); host != "localhost" && host != "127.0.0.1" && host != "::1" {
			r.Notes = append(r.Notes, "control_plane_health_check_address points at "+host+": novaedge-cpvip checks the local apiserver on localhost only")
		}
		r.Vars["NOVAEDGE_CP_VIP_API_PORT"] = u.Port()
	}
	return nil
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

func (r *Result) dropRest(env map[string]string) {
	names := make([]string, 0, len(env))
	for n := range env {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.drop(n, env[n])
	}
}

// drop reports a setting we do not take, with the table's reason.
func (r *Result) drop(name, value string) {
	why := "not a variable of kube-vip v1.2: ignored (a typo?)"
	if v, ok := lookupVar(name); ok {
		why = v.Why
	}
	r.Dropped = append(r.Dropped, name+"="+redact(name, value)+": "+why)
}

func redact(name, v string) string {
	if n := strings.ToLower(name); strings.Contains(n, "pass") || strings.Contains(n, "token") || n == "bgp_peers" {
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
