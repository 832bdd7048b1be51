package staticpod

import (
	"strings"
	"testing"
)

func TestSecretsStayOutOfThePod(t *testing.T) {
	const secret = "s3cr,et&pw"
	vars := map[string]string{
		"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32",
		"NOVAEDGE_CP_VIP_MODE":    "bgp",
		"NOVAEDGE_BGP_LOCAL_AS":   "65002",
		"NOVAEDGE_BGP_ROUTER_ID":  "192.0.2.11",
		"NOVAEDGE_BGP_PEERS":      "192.0.2.1@65001?password=s3cr%2Cet%26pw",
		"NOVAEDGE_BFD_AUTH_KEY":   secret,
	}
	pod, err := Render(Options{Flavour: Flavours["kubeadm"], Image: "ghcr.io/novaedge/cpvip:v1", Vars: vars})
	if err != nil {
		t.Fatal(err)
	}
	y := string(pod.YAML)
	for _, s := range []string{secret, "s3cr", "password="} {
		if strings.Contains(y, s) {
			t.Errorf("the pod holds %q:\n%s", s, y)
		}
	}
	if strings.Join(pod.Secrets, ",") != "NOVAEDGE_BGP_PEERS,NOVAEDGE_BFD_AUTH_KEY" {
		t.Errorf("secrets %v", pod.Secrets)
	}
	for _, want := range []string{`"--env-file", "/etc/novaedge/cpvip-secrets.env"`, "path: /etc/novaedge/cpvip-secrets.env", "NOVAEDGE_BGP_LOCAL_AS"} {
		if !strings.Contains(y, want) {
			t.Errorf("the pod lacks %q", want)
		}
	}
}

func TestFlavoursAndBadInput(t *testing.T) {
	vars := map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_METRICS_ADDR": ""}
	pod, err := Render(Options{Flavour: Flavours["k3s"], Image: "img:1", Vars: vars})
	if err != nil {
		t.Fatal(err)
	}
	y := string(pod.YAML)
	if !strings.Contains(y, "path: /var/lib/rancher/k3s/server/tls/server-ca.crt") || strings.Contains(y, "livenessProbe") ||
		pod.Path != "/var/lib/rancher/k3s/agent/pod-manifests/novaedge-cpvip.yaml" {
		t.Errorf("k3s pod with metrics off:\n%s", y)
	}
	if _, err := Render(Options{Flavour: Flavours["kubeadm"], Image: "bad image", Vars: vars}); err == nil {
		t.Error("an image reference with a blank accepted")
	}
}

// TestPodRunsAsItsOwnID: the pod runs as an id of its own, not as nobody
// (65534), whom any other process may run as: the secrets file it owns is
// readable by the pod alone, and the pod says so.
func TestPodRunsAsItsOwnID(t *testing.T) {
	pod, err := Render(Options{Flavour: Flavours["kubeadm"], Image: "x", Vars: map[string]string{
		"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_BFD_AUTH_KEY": "QXZJ"}})
	if err != nil {
		t.Fatal(err)
	}
	y := string(pod.YAML)
	for _, want := range []string{"runAsUser: 64443", "runAsGroup: 64443", "chown 64443:64443 " + DefaultSecretsFile} {
		if !strings.Contains(y, want) {
			t.Errorf("the pod lacks %q", want)
		}
	}
	if strings.Contains(y, "65534") {
		t.Error("the pod names nobody's id")
	}
}

// TestMetricsPort: the pod declares its metrics port, the PodMonitor's
// target, only where the metrics listen beyond loopback; the probes reach
// them on loopback or the address set.
func TestMetricsPort(t *testing.T) {
	for _, c := range []struct {
		addr      *string
		ports     bool
		probeHost string
	}{
		{nil, true, "127.0.0.1"}, // the pod's default, :9450
		{ptr("0.0.0.0:9451"), true, "127.0.0.1"},
		{ptr("127.0.0.1:9450"), false, "127.0.0.1"},
		{ptr("192.0.2.11:9450"), true, "192.0.2.11"},
	} {
		vars := map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32"}
		if c.addr != nil {
			vars["NOVAEDGE_CP_VIP_METRICS_ADDR"] = *c.addr
		}
		pod, err := Render(Options{Flavour: Flavours["kubeadm"], Image: "img:1", Vars: vars})
		if err != nil {
			t.Fatal(err)
		}
		y := string(pod.YAML)
		if strings.Contains(y, "name: metrics") != c.ports || !strings.Contains(y, "host: "+c.probeHost) {
			t.Errorf("metrics at %v: ports %v, probe host %s wanted:\n%s", c.addr, c.ports, c.probeHost, y)
		}
	}
	if _, err := Render(Options{Flavour: Flavours["kubeadm"], Image: "img:1", Vars: nil}); err != nil {
		t.Logf("no vars: %v", err) // an error, not a panic
	}
}

func ptr(s string) *string { return &s }
