package lab

import (
	"fmt"
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

// kubeletUnit is kubelet.service as the Kubernetes packages install it
// (kubernetes/release, deb and rpm).
const kubeletUnit = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`

// kubeadmDropIn is kubeadm's drop-in for kubelet.service, as the kubeadm
// package installs it: kubeadm init and join write kubeadm-flags.env, the
// operator /etc/default/kubelet (here: the node's cgroup root).
const kubeadmDropIn = `# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use
# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`

// cgroupsRWUnit is the one thing a lab node does that a machine does not
// need: nspawn mounts the v1 controllers read-only, and containerd's runc
// and the kubelet create cgroups there. It makes them writable and creates
// the kubelet's cgroup root (%[1]s) in every hierarchy the node sees, before
// containerd and the kubelet start.
const cgroupsRWUnit = `[Unit]
Description=Lab: cgroup controllers writable, kubelet's cgroup root
DefaultDependencies=no
Before=sysinit.target containerd.service kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -ec 'for h in /sys/fs/cgroup/*/; do h=$${h%%%%/}; \
  case $$h in */systemd|*/unified) ;; *) mount -o remount,bind,rw $$h ;; esac; \
  mkdir -p $$h/%[1]s; done; \
  for f in cpus mems; do cat /sys/fs/cgroup/cpuset/cpuset.$$f > /sys/fs/cgroup/cpuset/%[1]s/cpuset.$$f; done'
`
