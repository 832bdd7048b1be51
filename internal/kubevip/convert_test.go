package kubevip

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/config"
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
			"NOVAEDGE_BGP_PEERS": "198.51.100.1@65001,198.51.100.2@65001", "NOVAEDGE_BGP_PASSWORD": "s3cret",
			"NOVAEDGE_BGP_HOLD_TIME": "15s", "NOVAEDGE_CP_VIP_LOG_LEVEL": "debug", "NOVAEDGE_CP_VIP_API_PORT": "6443",
		}, []string{"bgp_keepalive_interval", "svc_enable"}},
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
	list, pw, mh, err := parsePeers("[2001:db8::1]:65001:pw:true, 198.51.100.1:65002")
	if err != nil || list != "[2001:db8::1]@65001,198.51.100.1@65002" || pw != "pw" || !mh {
		t.Errorf("%q %q %v %v", list, pw, mh, err)
	}
}

func FuzzConvert(f *testing.F) {
	for _, p := range []string{"testdata/arp-pod.yaml", "testdata/bgp-daemonset.yaml"} {
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
