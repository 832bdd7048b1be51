package e2e

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// kubeVIPBGPPod is a kube-vip v1.2 BGP static pod as its generator writes
// it, with two peers of different passwords and kube-vip's health check.
const kubeVIPBGPPod = `apiVersion: v1
kind: Pod
metadata:
  name: kube-vip
  namespace: kube-system
spec:
  containers:
  - args:
    - manager
    env:
    - name: vip_arp
      value: "false"
    - name: port
      value: "6443"
    - name: vip_interface
      value: lo
    - name: vip_subnet
      value: "32"
    - name: cp_enable
      value: "true"
    - name: cp_namespace
      value: kube-system
    - name: bgp_enable
      value: "true"
    - name: bgp_routerid
      value: 198.51.100.11
    - name: bgp_as
      value: "65002"
    - name: bgp_peers
      value: "198.51.100.1:65001:s3cret:false,198.51.100.2:65001:other&pw:false"
    - name: address
      value: 192.0.2.100
    - name: control_plane_health_check_address
      value: https://127.0.0.1:6443/livez
    - name: control_plane_health_check_period_seconds
      value: "1"
    - name: control_plane_health_check_failure_threshold
      value: "3"
    - name: prometheus_server
      value: :2112
    image: ghcr.io/kube-vip/kube-vip:v1.2.3
    name: kube-vip
    securityContext:
      capabilities:
        add: [NET_ADMIN, NET_RAW]
  hostNetwork: true
`

// TestMigratedBGPPeersWithOwnPasswords: a kube-vip BGP manifest whose two
// peers have different passwords converts, passes check-config without
// printing them, and runs: both sessions (TCP MD5, each its own key)
// establish with FRR and both routers get the VIP.
func TestMigratedBGPPeersWithOwnPasswords(t *testing.T) {
	b := newBGPLab(t, 1)
	r2, err := b.AddHost("r2", netip.MustParsePrefix("198.51.100.2/24"), netip.MustParsePrefix("2001:db8:1::2/64"), false)
	if err != nil {
		t.Fatal(err)
	}
	frr1, err := b.router.StartFRR(lab.FRRConfig{BGP: lab.BGPRouterConfig(routerV4, 65002, []netip.Addr{nodeV4(0)}, "s3cret", false)})
	if err != nil {
		t.Fatal(err)
	}
	frr2, err := r2.StartFRR(lab.FRRConfig{BGP: lab.BGPRouterConfig(netip.MustParseAddr("198.51.100.2"), 65002, []netip.Addr{nodeV4(0)}, "other&pw", false)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifest, envFile := filepath.Join(dir, "kube-vip.yaml"), filepath.Join(dir, "cpvip.env")
	if err := os.WriteFile(manifest, []byte(kubeVIPBGPPod), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "migrate", "kube-vip", manifest).Output()
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if err := os.WriteFile(envFile, out, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("converted:\n%s", out)
	check, err := exec.Command(binary, "check-config", "--env-file", envFile).CombinedOutput()
	if err != nil {
		t.Fatalf("check-config: %v\n%s", err, check)
	}
	if strings.Contains(string(check), "s3cret") || strings.Contains(string(check), "other") {
		t.Fatalf("check-config printed a password:\n%s", check)
	}
	p, err := b.nodes[0].Start("n1", []string{"NOVAEDGE_CP_VIP_METRICS_ADDR=", "NOVAEDGE_CP_VIP_SA_TOKEN_PATH=/nonexistent"},
		binary, "run", "--env-file", envFile)
	if err != nil {
		t.Fatal(err)
	}
	b.procs[0] = p
	for _, f := range []*lab.FRR{frr1, frr2} {
		err := lab.Eventually(30*time.Second, func() error {
			up, err := f.Established()
			if err == nil && !slices.Equal(up, []netip.Addr{nodeV4(0)}) {
				err = errNotEstablished
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []*lab.Host{b.router, r2} {
		err := lab.Eventually(10*time.Second, func() error {
			hops, err := h.KernelNextHops(vip4)
			if err == nil && !slices.Equal(hops, []netip.Addr{nodeV4(0)}) {
				err = errNotEstablished
			}
			return err
		})
		if err != nil {
			t.Fatalf("%s: VIP route: %v", h.Name, err)
		}
	}
	if strings.Contains(p.Output(), "s3cret") || strings.Contains(p.Output(), "other&pw") {
		t.Error("the daemon logged a password")
	}
}

var errNotEstablished = errors.New("not established yet")
