package kubevip

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/leakcheck"
)

func TestConvert(t *testing.T) {
	tests := []struct {
		file    string
		want    map[string]string
		dropped []string // names that must be reported as dropped
	}{
		{"testdata/arp-pod.yaml", map[string]string{
			"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_INTERFACE": "eth0", "NOVAEDGE_CP_VIP_API_PORT": "6443",
		}, []string{"vip_nodename", "svc_enable", "svc_leasename", "vip_leaderelection", "vip_leasename", "vip_leaseduration",
			"vip_renewdeadline", "vip_retryperiod", "cp_namespace", "dns_mode", "prometheus_server"}},
		{"testdata/bgp-daemonset.yaml", map[string]string{
			"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_INTERFACE": "lo", "NOVAEDGE_CP_VIP_MODE": "bgp",
			"NOVAEDGE_BGP_LOCAL_AS": "65002", "NOVAEDGE_BGP_ROUTER_ID": "198.51.100.11",
			"NOVAEDGE_BGP_PEERS":     "198.51.100.1@65001?password=s3cret,198.51.100.2@65001?password=other%26pw",
			"NOVAEDGE_BGP_HOLD_TIME": "15s", "NOVAEDGE_CP_VIP_LOG_LEVEL": "debug", "NOVAEDGE_CP_VIP_API_PORT": "6443",
		}, []string{"bgp_keepalive_interval", "svc_enable"}},
		{"testdata/bgp-dualstack-pod.yaml", map[string]string{
			"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32,2001:db8:ffff::100/128", "NOVAEDGE_CP_VIP_INTERFACE": "lo",
			"NOVAEDGE_CP_VIP_MODE": "bgp", "NOVAEDGE_BGP_LOCAL_AS": "65002", "NOVAEDGE_BGP_ROUTER_ID": "198.51.100.11",
			"NOVAEDGE_BGP_PEERS": "192.0.2.1@65001?password=s3cret,198.51.100.1@65001", "NOVAEDGE_CP_VIP_API_PORT": "6443",
			"NOVAEDGE_CP_VIP_HEALTH_INTERVAL": "2s", "NOVAEDGE_CP_VIP_FAIL_THRESHOLD": "4",
		}, []string{"vip_nodename", "dns_mode", "cp_namespace", "prometheus_server"}},
		{"testdata/bgp-ipv6-pod.yaml", map[string]string{
			"NOVAEDGE_CP_VIP_ADDRESS": "2001:db8:ffff::100/128", "NOVAEDGE_CP_VIP_INTERFACE": "lo", "NOVAEDGE_CP_VIP_MODE": "bgp",
			"NOVAEDGE_BGP_LOCAL_AS": "65002", "NOVAEDGE_BGP_ROUTER_ID": "198.51.100.11", "NOVAEDGE_BGP_PEER_ADDRESS": "2001:db8:1::1",
			"NOVAEDGE_BGP_PEER_AS": "65001", "NOVAEDGE_BGP_PASSWORD": "s3cret", "NOVAEDGE_CP_VIP_API_PORT": "6443",
		}, nil},
		{"testdata/arp-ipv6-pod.yaml", map[string]string{
			"NOVAEDGE_CP_VIP_ADDRESS": "2001:db8:1::100/128", "NOVAEDGE_CP_VIP_INTERFACE": "eth0", "NOVAEDGE_CP_VIP_API_PORT": "6443",
		}, []string{"vip_leaderelection", "vip_leasename"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Convert(data)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if r.Vars[k] != v {
					t.Errorf("%s = %q, want %q", k, r.Vars[k], v)
				}
			}
			if len(r.Vars) != len(tt.want) {
				t.Errorf("variables %v, want exactly %v", r.Vars, tt.want)
			}
			all := strings.Join(r.Dropped, "\n")
			for _, d := range tt.dropped {
				if !strings.Contains(all, d) {
					t.Errorf("%s not reported as dropped:\n%s", d, all)
				}
			}
			if strings.Contains(all, "s3cret") {
				t.Error("a password appears in the dropped list")
			}
			// The env file parses back to the same variables and passes validation.
			back, err := config.ParseEnvFile(bytes.NewReader(r.EnvFile(tt.file)))
			if err != nil || len(back) != len(r.Vars) {
				t.Fatalf("env file round trip: %v %v", back, err)
			}
			for k, v := range r.Vars {
				if back[k] != v {
					t.Errorf("round trip %s: %q, want %q", k, back[k], v)
				}
			}
			if _, err := config.LoadMap(back); err != nil {
				t.Errorf("converted configuration invalid: %v", err)
			}
		})
	}
}

func TestConvertErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"no kube-vip container": "kind: Pod\nspec:\n  containers:\n  - name: nginx\n    image: nginx\n",
		"no address":            "kind: Pod\nspec:\n  containers:\n  - name: kube-vip\n    image: x/kube-vip\n    env:\n    - name: port\n      value: \"6443\"\n",
		"DNS name as address":   "kind: Pod\nspec:\n  containers:\n  - name: kube-vip\n    image: x/kube-vip\n    env:\n    - name: address\n      value: api.example.com\n",
		"bad peers":             "kind: Pod\nspec:\n  containers:\n  - name: kube-vip\n    image: x/kube-vip\n    env:\n    - name: address\n      value: 192.0.2.1\n    - name: bgp_enable\n      value: \"true\"\n    - name: bgp_peers\n      value: \"[2001:db8::1:65000\"\n",
		"not YAML":              "kind: [\n",
	} {
		if _, err := Convert([]byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestIPv6PeersAndMultihop(t *testing.T) {
	list, err := parsePeers("[2001:db8::1]:65001:pw:true, 198.51.100.1:65002, 198.51.100.2:65002::false")
	if err != nil || list.Syntax() != "[2001:db8::1]@65001?password=pw&multihop=255,198.51.100.1@65002,198.51.100.2@65002" {
		t.Errorf("%q %v", list.Syntax(), err)
	}
	if _, err := parsePeers("198.51.100.1:x:topsecret:false"); err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("error %v: want one without the password", err)
	}
}

// TestVarsAccounted: every kube-vip variable is mapped or dropped with a
// reason, and the converter agrees with the table: a manifest that sets
// every one of them reports exactly the dropped ones as dropped.
func TestVarsAccounted(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Vars {
		if v.Dropped() && v.Why == "" {
			t.Errorf("%s: dropped without a reason", v.Name)
		}
		if seen[v.Name] {
			t.Errorf("%s listed twice", v.Name)
		}
		seen[v.Name] = true
	}
	if len(Vars) < 85 {
		t.Errorf("%d kube-vip variables, want all of kube-vip v1.2's (about 90)", len(Vars))
	}
	values := map[string]string{"address": "192.0.2.100", "vip_address": "192.0.2.100", "vip_cidr": "32", "vip_subnet": "32",
		"port": "6443", "bgp_enable": "true", "bgp_as": "65002", "bgp_routerid": "192.0.2.11", "bgp_peers": "192.0.2.1:65001",
		"bgp_peeraddress": "192.0.2.1", "bgp_peeras": "65001", "bgp_hold_time": "9", "vip_loglevel": "4", "vip_arpRate": "3000",
		"control_plane_health_check_address": "https://127.0.0.1:6443/livez", "control_plane_health_check_period_seconds": "2",
		"control_plane_health_check_timeout_seconds": "1", "control_plane_health_check_failure_threshold": "4",
		"mpbgp_nexthop": "fixed", "mpbgp_ipv6": "2001:db8::11"}
	var doc strings.Builder
	doc.WriteString("kind: Pod\nspec:\n  containers:\n  - name: kube-vip\n    image: ghcr.io/kube-vip/kube-vip:v1.2.3\n    env:\n")
	for _, v := range Vars {
		val, ok := values[v.Name]
		if !ok {
			val = "x"
		}
		fmt.Fprintf(&doc, "    - name: %s\n      value: %q\n", v.Name, val)
	}
	r, err := Convert([]byte(doc.String()))
	if err != nil {
		t.Fatal(err)
	}
	dropped := strings.Join(r.Dropped, "\n")
	named := map[string]bool{}
	for _, d := range r.Dropped {
		named[d[:strings.IndexAny(d, "=:")]] = true
	}
	for _, v := range Vars {
		if got := named[v.Name]; got != v.Dropped() {
			t.Errorf("%s: reported dropped %v, the table says %v:\n%s", v.Name, got, v.Dropped(), dropped)
		}
	}
	if strings.Contains(dropped, "ignored (a typo?)") {
		t.Errorf("a table name reported as unknown:\n%s", dropped)
	}
	r, err = Convert([]byte("kind: Pod\nspec:\n  containers:\n  - name: kube-vip\n    image: x/kube-vip\n    env:\n    - name: address\n      value: 192.0.2.1\n    - name: bgp_source_ip\n      value: 192.0.2.2\n"))
	if err != nil || !strings.Contains(strings.Join(r.Dropped, "\n"), "bgp_source_ip=192.0.2.2: not a variable of kube-vip v1.2") {
		t.Errorf("unknown name not reported: %v %v", r, err)
	}
}

// TestDualStack: kube-vip's vip_subnet "32,128" gives IPv4 the first mask
// and IPv6 the second.
func TestDualStack(t *testing.T) {
	for _, tt := range []struct{ addr, bits, want string }{
		{"192.0.2.100,2001:db8:ffff::100", "32,128", "192.0.2.100/32,2001:db8:ffff::100/128"},
		{"192.0.2.100,2001:db8:ffff::100", "32", "192.0.2.100/32,2001:db8:ffff::100/128"},
		{"192.0.2.100,2001:db8:ffff::100", "", "192.0.2.100/32,2001:db8:ffff::100/128"},
		{"2001:db8:ffff::100", "64", "2001:db8:ffff::100/64"},
		{"192.0.2.100, 2001:db8:ffff::100", "/24,/64", "192.0.2.100/24,2001:db8:ffff::100/64"},
	} {
		if got, err := vipList(tt.addr, tt.bits); err != nil || got != tt.want {
			t.Errorf("%q %q: %q %v, want %q", tt.addr, tt.bits, got, err, tt.want)
		}
	}
	if _, err := vipList("192.0.2.100", "33"); err == nil {
		t.Error("/33 for IPv4 accepted")
	}
}

func FuzzConvert(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Convert(b)
		if err != nil {
			return
		}
		if r.Vars["NOVAEDGE_CP_VIP_ADDRESS"] == "" {
			t.Fatal("converted without an address")
		}
		if _, err := config.ParseEnvFile(bytes.NewReader(r.EnvFile("x"))); err != nil {
			t.Fatalf("output is not an env file: %v", err)
		}
	})
}

// FuzzPeerPasswordsNeverEchoed: no error of the bgp_peers reader repeats a
// piece of an entry's password (ADDR:AS:PASSWORD...), whatever separators
// the password holds.
func FuzzPeerPasswordsNeverEchoed(f *testing.F) {
	f.Add("192.0.2.1", "65001", []byte("QX,ZJ,W"), ":true,192.0.2.2:65002")
	f.Add("192.0.2.1", "65001", []byte("QXZ]J:"), "")
	f.Fuzz(func(t *testing.T, addr, as string, raw []byte, after string) {
		if strings.ContainsAny(addr+as, ":,[]") {
			return // the password would not be the third field
		}
		secret := leakcheck.Secret(raw)
		value := addr + ":" + as + ":" + secret + after
		if _, err := parsePeers(value); err != nil {
			if w := leakcheck.Fragment(err.Error(), value, secret, 3); w != "" {
				t.Fatalf("parsePeers(%q): error %q repeats %q of the password", value, err, w)
			}
		}
	})
}
