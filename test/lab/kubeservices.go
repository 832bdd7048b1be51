package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// containerdConfig is each node's containerd 1.6 configuration: its own
// root, state and socket (inside the node's namespaces), the lab's pause
// image, cgroupfs, and restrict_oom_score_adj: this machine removes
// CAP_SYS_RESOURCE from every bounding set, so runc could not write a pod's
// negative oom_score_adj and every container start would fail.
const containerdConfig = `version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "/var/lib/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10.1"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
`

// cniConfig is node i's pod network: Debian's bridge plugin with IPv6
// addresses of its own documentation /64, nothing routed between nodes.
// The lab runs no pod that talks to another; the network is there so the
// kubelet reports the node Ready, as a CNI would (kubeadm upgrade's
// preflight wants Ready nodes and runs a test Job).
func cniConfig(i int) string {
	return fmt.Sprintf(`{"cniVersion": "0.4.0", "name": "lab", "plugins": [{"type": "bridge", "bridge": "cni0",
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "2001:db8:ffff:%x::/64"}]]}}]}
`, i+1)
}

// ContainerdSocket is where each node's containerd listens, inside the node.
const ContainerdSocket = "/run/containerd/containerd.sock"

// kubeletLoop stands in for systemd's kubelet.service (Restart=always): it
// runs kubelet as kubeadm's drop-in does while /run/kubelet.want says "run",
// and starts it again a second after it exits. The systemctl shim writes
// the wish and ends the running kubelet.
const kubeletLoop = `while :; do
  if [ "$(cat /run/kubelet.want 2>/dev/null)" != run ]; then sleep 0.2; continue; fi
  KUBELET_KUBEADM_ARGS=""
  [ -f /var/lib/kubelet/kubeadm-flags.env ] && . /var/lib/kubelet/kubeadm-flags.env
  kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf \
    --config=/var/lib/kubelet/config.yaml $KUBELET_KUBEADM_ARGS --cgroup-root=/$CGROUP_ROOT >>/var/log/kubelet.log 2>&1 &
  echo $! > /run/kubelet.pid
  wait $!
  rm -f /run/kubelet.pid
  sleep 1
done
`

// systemctlShim is the systemctl kubeadm calls (daemon-reload, start, stop,
// restart, status, is-enabled, is-active kubelet): it drives kubeletLoop.
const systemctlShim = `#!/bin/sh
# Only the kubelet runs here: another unit (kubeadm asks whether
# systemd-resolved is active, and would point the kubelet at its resolv.conf)
# is inactive.
case "$1" in is-active|status)
  case "$2" in kubelet|kubelet.service|"") ;; *) echo inactive; exit 3 ;; esac ;;
esac
alive() { [ -f /run/kubelet.pid ] && kill -0 "$(cat /run/kubelet.pid)" 2>/dev/null; }
stop() { echo stop > /run/kubelet.want; if alive; then kill "$(cat /run/kubelet.pid)"; fi; i=0; while alive && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; }
case "$1" in
daemon-reload|enable|disable) exit 0 ;;
start) echo run > /run/kubelet.want ;;
stop) stop ;;
restart) stop; echo run > /run/kubelet.want ;;
is-enabled) echo enabled ;;
is-active) if alive; then echo active; else echo inactive; exit 3; fi ;;
status) echo "kubelet.service - kubelet (lab restart loop)"; echo "   Loaded: loaded"; alive || exit 3 ;;
*) echo "systemctl shim: $* not supported" >&2; exit 1 ;;
esac
`

// StartServices writes containerd's configuration, the systemctl shim and
// links to the lab's kubelet and kubeadm into the node, and starts
// containerd and the kubelet loop (kubelet itself waits for kubeadm's
// `systemctl start`).
func (n *KubeNode) StartServices(bin KubeBinaries) error {
	for name, target := range map[string]string{"kubelet": bin.Kubelet, "kubeadm": bin.Kubeadm} {
		if err := os.Symlink(target, filepath.Join(n.Bin(), name)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(n.Bin(), "systemctl"), []byte(systemctlShim), 0o755); err != nil {
		return err
	}
	if err := n.WriteFile("/etc/containerd/config.toml", []byte(containerdConfig), 0o644); err != nil {
		return err
	}
	if _, err := n.StartIn("containerd", false, "containerd", "--config", "/etc/containerd/config.toml", "--log-level", "warn"); err != nil {
		return err
	}
	if _, err := n.StartIn("kubelet-loop", false, "env", "CGROUP_ROOT="+n.cgroup, "sh", "-c", kubeletLoop); err != nil {
		return err
	}
	return Eventually(30*time.Second, func() error {
		_, err := n.Run("ctr", "-a", ContainerdSocket, "version")
		return err
	})
}

// PowerOn boots a node that was powered off: the holder, containerd, and
// kubelet (enabled: systemd starts it at boot), which starts the static
// pods kubeadm left in /etc/kubernetes/manifests.
func (n *KubeNode) PowerOn(bin KubeBinaries) error {
	if err := n.boot(); err != nil {
		return err
	}
	if err := n.StartServices(bin); err != nil {
		return err
	}
	_, err := n.Run("systemctl", "start", "kubelet")
	return err
}

// ImportImages loads docker-archive or OCI tarballs into the node's
// containerd, in the namespace the CRI uses.
func (n *KubeNode) ImportImages(files ...string) error {
	for _, f := range files {
		if out, err := n.Run("ctr", "-a", ContainerdSocket, "-n", "k8s.io", "images", "import", "--all-platforms", f); err != nil {
			return fmt.Errorf("importing %s: %w (%s)", f, err, out)
		}
	}
	return nil
}

// KubeletLog returns the node's kubelet log.
func (n *KubeNode) KubeletLog() string {
	b, _ := n.ReadFile("/var/log/kubelet.log")
	return string(b)
}
