package e2e

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
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
	router *lab.Host // BGP mode
	vipDev string    // where our pod binds the VIP: eth0 (L2) or lo (BGP)
	svc    *sdLab    // we run as the systemd service (the .deb), not the static pod
	readme bool      // our static pod as the README's kubeadm quick start writes it
	failed *failures // the events' failures, said again last
}

// failures keeps a test's failure messages and says them again after
// everything else the test logs when it fails (the nodes' journals): CI
// shows only the end of a test's output, where they would be lost.
type failures struct {
	mu   sync.Mutex
	msgs []string
}

// add keeps msg.
func (f *failures) add(msg string) {
	f.mu.Lock()
	f.msgs = append(f.msgs, msg)
	f.mu.Unlock()
}

// errorf is t.Errorf, kept.
func (f *failures) errorf(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	f.add(t.Name() + ": " + msg)
	t.Error(msg)
}

// fatalf is t.Fatalf, kept.
func (f *failures) fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	f.errorf(t, format, args...)
	t.FailNow()
}

// run is t.Run that keeps the subtest's name when it fails (a t.Fatal in
// a helper, not only the events' checks).
func (k *kubeLab) run(t *testing.T, name string, f func(t *testing.T)) {
	if !t.Run(name, f) {
		k.failed.add(t.Name() + "/" + name + ": failed (its lines above)")
	}
}

// sayAgain is a cleanup registered before the lab's: it runs last.
func (f *failures) sayAgain(t testing.TB) func() {
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, m := range f.msgs {
			t.Logf("FAILED (said again after the logs) %s", m)
		}
		if len(f.msgs) == 0 && t.Failed() {
			t.Logf("FAILED (said again after the logs) %s: before its events (set-up, kubeadm init or join): its lines above", t.Name())
		}
	}
}

// newKubeLabOf starts a kubeLab: its failures are said again last.
func newKubeLabOf(t testing.TB, vipDev string) *kubeLab {
	k := &kubeLab{vipDev: vipDev, failed: &failures{}}
	t.Cleanup(k.failed.sayAgain(t))
	k.Lab = newLab(t)
	return k
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

// newKubeLab builds n kubeadm nodes (192.0.2.11…) and a client on one
// switch (L2 mode); nothing of kubeadm runs yet.
func newKubeLab(t testing.TB, n int, opts lab.KubeOptions) *kubeLab {
	t.Helper()
	k := newKubeLabOf(t, "eth0")
	for i := range n {
		h, err := k.AddHost(fmt.Sprintf("n%d", i+1), netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(11 + i)}), 24), netip.Prefix{}, true)
		if err != nil {
			t.Fatal(err)
		}
		k.hosts = append(k.hosts, h)
	}
	var err error
	if k.client, err = k.AddHost("cl", mustPrefix("192.0.2.2/24"), netip.Prefix{}, false); err != nil {
		t.Fatal(err)
	}
	k.startNodes(t, opts)
	return k
}

// newKubeBGPLab builds n kubeadm nodes (198.51.100.11…) and a router
// (198.51.100.1, FRR not started yet) on one switch, and a client behind the
// router (203.0.113.130, beside the service range): the VIP is reached only
// through the routes the nodes announce.
func newKubeBGPLab(t testing.TB, n int, opts lab.KubeOptions) *kubeLab {
	t.Helper()
	k := newKubeLabOf(t, "lo")
	var err error
	if k.router, err = k.AddHost("r", netip.PrefixFrom(routerV4, 24), netip.Prefix{}, false); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		h, err := k.AddHost(fmt.Sprintf("n%d", i+1), netip.PrefixFrom(nodeV4(i), 24), netip.Prefix{}, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.DefaultRoute(routerV4, netip.Addr{}); err != nil {
			t.Fatal(err)
		}
		k.hosts = append(k.hosts, h)
	}
	if k.client, err = k.AddBareHost("cl"); err != nil {
		t.Fatal(err)
	}
	rAddr, clAddr := netip.MustParsePrefix("203.0.113.129/25"), netip.MustParsePrefix("203.0.113.130/25")
	if err := k.Link(k.router, "eth1", []netip.Prefix{rAddr}, k.client, "eth0", []netip.Prefix{clAddr}); err != nil {
		t.Fatal(err)
	}
	if err := k.client.DefaultRoute(rAddr.Addr(), netip.Addr{}); err != nil {
		t.Fatal(err)
	}
	if err := k.router.Router(); err != nil {
		t.Fatal(err)
	}
	k.startNodes(t, opts)
	return k
}

func newLab(t testing.TB) *lab.Lab {
	l, err := lab.New(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// startNodes makes the hosts kubeadm nodes with our image imported.
func (k *kubeLab) startNodes(t testing.TB, opts lab.KubeOptions) {
	t.Helper()
	bin := kubeBinaries(t)
	img := ourImage(t)
	start := time.Now()
	var err error
	if k.kc, err = lab.NewKubeCluster(k.Lab, bin, k.hosts, kubeVIP, opts, img); err != nil {
		t.Fatal(err)
	}
	t.Logf("kubeadm lab: %d systemd nodes with containerd, kubelet and images in %s", len(k.hosts), time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range k.kc.Nodes {
				t.Logf("kubelet %s, last lines:\n%s", n.Name, tail(n.KubeletLog(), 20))
				t.Logf("novaedge-cpvip %s, last lines:\n%s", n.Name, tail(k.podLog(n, "novaedge-cpvip"), 200))
			}
		}
	})
}

// writeOurPod writes what `novaedge-cpvip manifest pod ARGS` prints to
// node i's manifest directory, as the kubeadm guide says (the command runs
// on the host: the node has no binary of ours).
func (k *kubeLab) writeOurPod(t testing.TB, i int, args ...string) {
	t.Helper()
	out, err := exec.Command(binary, append([]string{"manifest", "pod"}, args...)...).Output()
	if err != nil {
		t.Fatalf("novaedge-cpvip manifest pod %s: %v", strings.Join(args, " "), err)
	}
	if err := k.kc.Nodes[i].WriteFile(lab.Manifest("novaedge-cpvip"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// podLog returns the current log of the named static pod's container on
// node n (kubelet keeps it under /var/log/pods); ours, when we run as the
// service, is its journal. Each line starts with its time (RFC 3339).
func (k *kubeLab) podLog(n *lab.KubeNode, pod string) string {
	if k.svc != nil && pod == "novaedge-cpvip" {
		out, _ := n.Run("journalctl", "--no-pager", "-o", "short-iso-precise", "-u", "novaedge-cpvip", "-n", "200")
		return out
	}
	out, _ := n.Run("sh", "-c", "cat /var/log/pods/kube-system_"+pod+"-"+n.Name+"_*/*/*.log 2>/dev/null | tail -n 200")
	return out
}

// runOurs puts us on node i before its kubeadm init or join: our static
// pod (k.readme: as the README's quick start writes it), or (k.svc) the
// .deb installed, configured and enabled as the README says.
func (k *kubeLab) runOurs(t testing.TB, i int, podArgs func(int) []string) {
	t.Helper()
	switch {
	case k.readme:
		k.runReadmeQuickStart(t, i)
		return
	case k.svc == nil:
		k.writeOurPod(t, i, podArgs(i)...)
		return
	}
	k.svc.install(t, i, k.svc.debs[0])
}

// asService makes the lab run us as the systemd service on every node
// (env gives node i's settings) instead of the static pod.
func (k *kubeLab) asService(t testing.TB, env func(i int) string) {
	t.Helper()
	k.svc = &sdLab{client: k.client, env: env}
	for _, n := range k.kc.Nodes {
		k.svc.nodes = append(k.svc.nodes, n.SystemdNode)
	}
	k.svc.buildDebs(t)
	t.Cleanup(func() { k.svc.checkJournals(t) })
}

// holders lists the nodes that hold the VIP (eth0 in L2 mode, lo in BGP).
func (k *kubeLab) holders(t testing.TB) []int {
	t.Helper()
	var out []int
	for i, n := range k.kc.Nodes {
		if _, ok, err := n.HasOn(k.vipDev, vip4); err != nil {
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
func ourPodArgs(int) []string { return []string{"--vip-address", vip4.String()} }

// running is a condition: our pod's process runs on node i (want) or runs
// no more (!want).
func (k *kubeLab) running(i int, want bool) func() error {
	return func() error {
		if got := len(k.kc.Nodes[i].PIDsOf("novaedge-cpvip")) > 0; got != want {
			return fmt.Errorf("our pod running on %s: %v, want %v", k.kc.Nodes[i].Name, got, want)
		}
		return nil
	}
}

// heldElsewhere is a condition: exactly one node holds the VIP, not node h.
func (k *kubeLab) heldElsewhere(t testing.TB, h int) func() error {
	return func() error {
		if hs := k.holders(t); len(hs) != 1 || hs[0] == h {
			return fmt.Errorf("holders %v, want one other than %s", hs, k.kc.Nodes[h].Name)
		}
		return nil
	}
}

// kill SIGKILLs the named process on node i, as an OOM kill does, and
// returns a condition: the kubelet has started a new one.
func (k *kubeLab) kill(i int, name string) (restarted func() error, err error) {
	n := k.kc.Nodes[i]
	old := n.PIDsOf(name)
	if len(old) == 0 {
		return nil, fmt.Errorf("no %s on %s", name, n.Name)
	}
	for _, pid := range old {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return func() error {
		if now := n.PIDsOf(name); len(now) == 0 || slices.Equal(now, old) {
			return fmt.Errorf("%s on %s not restarted yet", name, n.Name)
		}
		return nil
	}, nil
}

// powerOff cuts node i's power: its switch port down, every process killed
// at once, and the VIP gone from its interface (kernel state is lost; the
// lab keeps the namespace).
func (k *kubeLab) powerOff(t testing.TB, i int) {
	n := k.kc.Nodes[i]
	if err := n.SetSwitchPort(false); err != nil {
		t.Fatal(err)
	}
	n.PowerOff()
	if _, err := n.Host.Exec("ip", "addr", "del", vip4.String(), "dev", k.vipDev); err != nil {
		t.Logf("VIP already gone from the powered-off node: %v", err)
	}
}

// powerOn boots node i again: switch port up, the node's services started
// (the kubelet starts the static pods kubeadm left).
func (k *kubeLab) powerOn(t testing.TB, i int) {
	n := k.kc.Nodes[i]
	if err := n.SetSwitchPort(true); err != nil {
		t.Fatal(err)
	}
	if err := n.PowerOn(k.kc.Bin); err != nil {
		t.Fatal(err)
	}
}
