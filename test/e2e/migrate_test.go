package e2e

import (
	"errors"
	"fmt"
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
	envFile, p := runMigrated(t, b, kubeVIPBGPPod)
	check, _ := exec.Command(binary, "check-config", "--env-file", envFile).CombinedOutput()
	if strings.Contains(string(check), "s3cret") || strings.Contains(string(check), "other") {
		t.Fatalf("check-config printed a password:\n%s", check)
	}
	for _, f := range []*lab.FRR{frr1, frr2} {
		if err := waitEstablished(f, nodeV4(0)); err != nil {
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

// waitEstablished waits until f's only established session is with node.
func waitEstablished(f *lab.FRR, node netip.Addr) error {
	return lab.Eventually(30*time.Second, func() error {
		up, err := f.Established()
		if err == nil && !slices.Equal(up, []netip.Addr{node}) {
			err = errNotEstablished
		}
		return err
	})
}

// runMigrated converts manifest with migrate kube-vip, checks the result with
// check-config and runs it on b's first node; it returns the env file.
func runMigrated(t *testing.T, b *bgpLab, manifest string) (string, *lab.Process) {
	t.Helper()
	dir := t.TempDir()
	path, envFile := filepath.Join(dir, "kube-vip.yaml"), filepath.Join(dir, "cpvip.env")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "migrate", "kube-vip", path).Output()
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if err := os.WriteFile(envFile, out, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("converted:\n%s", out)
	if check, err := exec.Command(binary, "check-config", "--env-file", envFile).CombinedOutput(); err != nil {
		t.Fatalf("check-config: %v\n%s", err, check)
	}
	p, err := b.nodes[0].Start("n1", []string{"NOVAEDGE_CP_VIP_METRICS_ADDR=", "NOVAEDGE_CP_VIP_SA_TOKEN_PATH=/nonexistent"},
		binary, "run", "--env-file", envFile)
	if err != nil {
		t.Fatal(err)
	}
	b.procs[0] = p
	return envFile, p
}

// TestMigratedDualStackOverIPv4Peers: issue 15's dual-stack manifest
// converts, passes check-config and runs. The node reaches its two routers
// over two links (198.51.100.1 as in every BGP lab, 192.0.2.1 on a second
// veth); both IPv4 sessions establish and carry the IPv6 VIP too (MP-BGP),
// each with the node's IPv6 address on that router's link as next hop; a
// client behind the first router reaches both VIPs.
func TestMigratedDualStackOverIPv4Peers(t *testing.T) {
	b := newBGPLab(t, 1)
	r2, err := b.AddBareHost("r2")
	if err != nil {
		t.Fatal(err)
	}
	r2v4, n1v4, r2v6, n1v6 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.11"),
		netip.MustParseAddr("2001:db8:3::1"), netip.MustParseAddr("2001:db8:3::11")
	err = b.Link(r2, "eth0", []netip.Prefix{netip.PrefixFrom(r2v4, 24), netip.PrefixFrom(r2v6, 64)},
		b.nodes[0], "eth1", []netip.Prefix{netip.PrefixFrom(n1v4, 24), netip.PrefixFrom(n1v6, 64)})
	if err != nil {
		t.Fatal(err)
	}
	vip6 := netip.MustParsePrefix("2001:db8:ffff::100/128")
	frr1, err := b.router.StartFRR(lab.FRRConfig{BGP: lab.BGPRouterConfig(routerV4, 65002, []netip.Addr{nodeV4(0)}, "", false) +
		lab.IPv6OverIPv4([]netip.Addr{nodeV4(0)})})
	if err != nil {
		t.Fatal(err)
	}
	frr2, err := r2.StartFRR(lab.FRRConfig{BGP: lab.BGPRouterConfig(r2v4, 65002, []netip.Addr{n1v4}, "s3cret", false) +
		lab.IPv6OverIPv4([]netip.Addr{n1v4})})
	if err != nil {
		t.Fatal(err)
	}
	// Issue 15's manifest: kube-vip v1.2 BGP, dual-stack VIP, masks "32,128",
	// two IPv4 peers, one with a password.
	manifest, err := os.ReadFile("../../internal/kubevip/testdata/bgp-dualstack-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	envFile, p := runMigrated(t, b, string(manifest))
	check, _ := exec.Command(binary, "check-config", "--env-file", envFile).CombinedOutput()
	if !strings.Contains(string(check), "MP-BGP") {
		t.Errorf("check-config does not say the IPv6 VIP goes over the IPv4 sessions:\n%s", check)
	}
	for _, r := range []struct {
		frr        *lab.FRR
		host       *lab.Host
		node, hop6 netip.Addr
	}{{frr1, b.router, nodeV4(0), nodeV6(0)}, {frr2, r2, n1v4, n1v6}} {
		if err := waitEstablished(r.frr, r.node); err != nil {
			t.Fatalf("%s: %v", r.host.Name, err)
		}
		for _, want := range []struct {
			vip netip.Prefix
			hop netip.Addr
		}{{vip4, r.node}, {vip6, r.hop6}} {
			err := lab.Eventually(10*time.Second, func() error {
				hops, err := r.host.KernelNextHops(want.vip)
				if err == nil && !slices.Equal(hops, []netip.Addr{want.hop}) {
					err = fmt.Errorf("next hops %v, want %v", hops, want.hop)
				}
				return err
			})
			if err != nil {
				t.Fatalf("%s: route to %s: %v", r.host.Name, want.vip, err)
			}
		}
	}
	for _, vip := range []netip.Addr{vip4.Addr(), vip6.Addr()} {
		if _, err := b.client.Whoami(vip, 6443, 3*time.Second); err != nil {
			t.Errorf("client to %s: %v", vip, err)
		}
	}
	if strings.Contains(p.Output(), "s3cret") {
		t.Error("the daemon logged a password")
	}
}
