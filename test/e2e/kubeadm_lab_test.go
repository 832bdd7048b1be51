package e2e

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// kubeLab is a kubeadm control plane of real nodes (containerd, kubelet)
// on one switch, with a client, our image in every node's containerd and
// our static pod written by `novaedge-cpvip manifest pod`.
type kubeLab struct {
	*lab.Lab
	kc     *lab.KubeCluster
	client *lab.Host
	hosts  []*lab.Host
}

// kubeVIP is the control plane's endpoint in the kubeadm lab.
var kubeVIP = netip.AddrPortFrom(vip4.Addr(), 6443)

func kubeBinaries(t testing.TB) lab.KubeBinaries {
	t.Helper()
	b, err := lab.KubeBinariesFromEnv()
	needBuilt(t, err)
	return b
}

// ourImage builds our image from the test binary as `make image` does
// (packaging/oci, named ghcr.io/novaedge/cpvip:dev, the name `manifest pod`
// of a dev build gives) and returns it as a tarball for ctr.
func ourImage(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	layout := filepath.Join(dir, "oci")
	if out, err := exec.Command("go", "run", "../../packaging/oci", "-bin", binary, "-out", layout,
		"-name", "ghcr.io/novaedge/cpvip", "-tag", "dev").CombinedOutput(); err != nil {
		t.Fatalf("building our image: %v\n%s", err, out)
	}
	tarball := filepath.Join(dir, "cpvip.tar")
	if out, err := exec.Command("tar", "-C", layout, "-cf", tarball, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	return tarball
}

// newKubeLab builds n kubeadm nodes (192.0.2.11…) and a client; nothing of
// kubeadm runs yet.
func newKubeLab(t testing.TB, n int, opts lab.KubeOptions) *kubeLab {
	t.Helper()
	bin := kubeBinaries(t)
	img := ourImage(t)
	l, err := lab.New(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	k := &kubeLab{Lab: l}
	for i := range n {
		h, err := l.AddHost(fmt.Sprintf("n%d", i+1), netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(11 + i)}), 24), netip.Prefix{}, true)
		if err != nil {
			t.Fatal(err)
		}
		k.hosts = append(k.hosts, h)
	}
	if k.client, err = l.AddHost("cl", mustPrefix("192.0.2.2/24"), netip.Prefix{}, false); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if k.kc, err = lab.NewKubeCluster(l, bin, k.hosts, kubeVIP, opts, img); err != nil {
		t.Fatal(err)
	}
	t.Logf("kubeadm lab: %d nodes with containerd, kubelet loop and images in %s", n, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range k.kc.Nodes {
				t.Logf("kubelet %s, last lines:\n%s", n.Name, tail(n.KubeletLog(), 20))
				t.Logf("novaedge-cpvip %s, last lines:\n%s", n.Name, tail(k.podLog(n, "novaedge-cpvip"), 30))
			}
		}
	})
	return k
}

// writeOurPod runs `novaedge-cpvip manifest pod ARGS > MANIFEST` on node i,
// as the kubeadm guide says.
func (k *kubeLab) writeOurPod(t testing.TB, i int, args ...string) {
	t.Helper()
	cmd := binary + " manifest pod " + strings.Join(args, " ") + " > " + lab.Manifest("novaedge-cpvip")
	if out, err := k.kc.Nodes[i].Run("sh", "-c", "mkdir -p /etc/kubernetes/manifests && "+cmd); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

// podLog returns the current log of the named static pod's container on
// node n (kubelet keeps it under /var/log/pods).
func (k *kubeLab) podLog(n *lab.KubeNode, pod string) string {
	out, _ := n.Run("sh", "-c", "cat /var/log/pods/kube-system_"+pod+"-"+n.Name+"_*/*/*.log 2>/dev/null | tail -n 200")
	return out
}

// holders lists the nodes whose eth0 holds the VIP.
func (k *kubeLab) holders(t testing.TB) []int {
	t.Helper()
	var out []int
	for i, n := range k.kc.Nodes {
		if _, ok, err := n.Has(vip4); err != nil {
			t.Logf("%s: %v", n.Name, err)
		} else if ok {
			out = append(out, i)
		}
	}
	return out
}

// waitHolder waits until exactly one node holds the VIP and returns it.
func (k *kubeLab) waitHolder(t testing.TB, d time.Duration) int {
	t.Helper()
	var h []int
	if err := lab.Eventually(d, func() error {
		if h = k.holders(t); len(h) != 1 {
			return fmt.Errorf("holders %v", h)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return h[0]
}

// ourPodArgs are the `manifest pod` flags of the L2 tests: the VIP, and
// our defaults otherwise.
var ourPodArgs = []string{"--vip-address", vip4.String()}
