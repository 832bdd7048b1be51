package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// KubeNode is a machine of the kubeadm lab: a systemd node (Debian with
// systemd as PID 1, containerd from Debian's package) with the lab's
// kubelet and kubeadm, kubelet.service and kubeadm's own drop-in, as the
// Kubernetes packages install them: kubeadm starts and restarts the kubelet
// through systemctl, systemd restarts it when it dies. /var/lib/kubelet,
// /var/lib/etcd and /var/lib/containerd are real directories of the host
// bound into the node (containerd's overlay snapshots cannot live on an
// overlay); kubelet's cgroups go under a root of the node's own in every
// v1 hierarchy (--cgroup-root, in /etc/default/kubelet), so that three
// kubelets on one host do not share one.
type KubeNode struct {
	*SystemdNode
	dir    string // on the host: the bound state directories
	cgroup string // kubelet's --cgroup-root, without the slash
}

// cgroupV1 are the v1 controllers' hierarchies, which a node sees whole
// (nspawn gives it its own subtree of the systemd and unified ones only).
var cgroupV1 = []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices", "freezer"}

// AddKubeNode makes a lab host into a kubeadm node and boots it: hosts is
// the /etc/hosts text every node adds (each node's name resolves), cni its
// pod network configuration, images the tarballs its containerd imports.
func (l *Lab) AddKubeNode(h *Host, tree string, bin KubeBinaries, hosts, cni string, images ...string) (*KubeNode, error) {
	dir, err := l.daemonDir("kube-"+h.Name, "root")
	if err != nil {
		return nil, err
	}
	sd, err := h.NewSystemdNode(tree)
	if err != nil {
		return nil, err
	}
	n := &KubeNode{SystemdNode: sd, dir: dir, cgroup: h.NS + "-kubelet"}
	l.mu.Lock()
	l.stops = append(l.stops, n.removeCgroups) // stops run last first: after the node is gone
	l.mu.Unlock()
	sd.APIVFSWritable = true
	sd.Syscalls = []string{"@keyring", "bpf"} // runc joins a session keyring per container; our spreading loads an sk_lookup program
	sd.Writable = map[string]bool{}
	for _, d := range []string{"kubelet", "etcd", "containerd"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
		dst := "/var/lib/" + d
		sd.Binds = append(sd.Binds, filepath.Join(dir, d)+":"+dst)
		sd.Writable[dst] = true
	}
	sd.Binds = append(sd.Binds, bin.Kubelet+":/usr/bin/kubelet", bin.Kubeadm+":/usr/bin/kubeadm", "/dev/kmsg:/dev/kmsg")
	for i, img := range images {
		sd.Binds = append(sd.Binds, fmt.Sprintf("%s:/var/lib/lab-images/%d.tar", img, i))
	}
	base, err := os.ReadFile(filepath.Join(sd.Root, "etc/hosts"))
	if err != nil {
		return nil, err
	}
	files := map[string]string{
		"/etc/hosts":                                            string(base) + hosts,
		"/etc/containerd/config.toml":                           containerdConfig,
		"/etc/cni/net.d/10-lab.conflist":                        cni,
		"/lib/systemd/system/kubelet.service":                   kubeletUnit,
		"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": kubeadmDropIn,
		"/etc/default/kubelet":                                  "KUBELET_EXTRA_ARGS=--cgroup-root=/" + n.cgroup + "\n",
		"/etc/systemd/system/lab-cgroups-rw.service":            fmt.Sprintf(cgroupsRWUnit, n.cgroup),
		"/etc/sysctl.d/99-lab-kubeadm.conf":                     "net.ipv4.ip_forward = 1\n", // kubeadm's preflight wants it; per namespace
	}
	for path, text := range files {
		if err := sd.WriteFile(path, []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	// Enabled, as the kubelet package's postinst does, and the lab's unit.
	for link, unit := range map[string]string{
		"multi-user.target.wants/kubelet.service":     "/lib/systemd/system/kubelet.service",
		"sysinit.target.wants/lab-cgroups-rw.service": "/etc/systemd/system/lab-cgroups-rw.service",
	} {
		link = filepath.Join(sd.Root, "etc/systemd/system", link)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink(unit, link); err != nil && !os.IsExist(err) {
			return nil, err
		}
	}
	if err := n.PowerOn(bin); err != nil {
		return nil, err
	}
	for i := range images {
		if out, err := n.Run("ctr", "-a", ContainerdSocket, "-n", "k8s.io", "images", "import", "--all-platforms", fmt.Sprintf("/var/lib/lab-images/%d.tar", i)); err != nil {
			return nil, fmt.Errorf("node %s: importing %s: %w (%s)", h.Name, images[i], err, out)
		}
	}
	return n, nil
}

// PowerOn boots the node: systemd starts containerd and the kubelet
// (enabled), which starts the static pods kubeadm left in
// /etc/kubernetes/manifests. It returns once containerd answers.
func (n *KubeNode) PowerOn(KubeBinaries) error {
	if err := n.Boot(2 * time.Minute); err != nil {
		return err
	}
	return Eventually(30*time.Second, func() error {
		_, err := n.Run("ctr", "-a", ContainerdSocket, "version")
		return err
	})
}

// PowerOff ends every process of the node at once, as a machine losing
// power does; the node's files stay.
func (n *KubeNode) PowerOff() { n.Kill() }

// Run runs a command inside the node and returns its standard output;
// standard error goes into the error when it fails.
func (n *KubeNode) Run(args ...string) (string, error) { return n.SystemdNode.Exec(args...) }

// WriteFile writes a file inside the running node (what its processes see:
// the bound directories too).
func (n *KubeNode) WriteFile(path string, data []byte, mode os.FileMode) error {
	_, err := n.ExecInput(strings.NewReader(string(data)), "sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"`,
		"write", path, strconv.FormatUint(uint64(mode.Perm()), 8))
	return err
}

// ReadFile reads a file of the running node.
func (n *KubeNode) ReadFile(path string) ([]byte, error) {
	out, err := n.Run("cat", path)
	return []byte(out), err
}

// KubeletLog returns the kubelet's journal.
func (n *KubeNode) KubeletLog() string {
	out, _ := n.Journal("-u", "kubelet", "-n", "200")
	return out
}

// PIDsOf lists the node's processes (as the host numbers them) running
// the program named name (argv[0]'s last element: not a journalctl or
// systemctl whose arguments name it). The lab's pods use the host network,
// so their processes are in the node's network namespace.
func (n *KubeNode) PIDsOf(name string) []int {
	var out []int
	for _, pid := range nsPIDs(n.NS) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if filepath.Base(argv0) == name {
			out = append(out, pid)
		}
	}
	return out
}

// removeCgroups removes kubelet's cgroups in the v1 controllers' hierarchies
// (depth first; the node sees each from this process's cgroup in it) once
// the node is gone; those in the systemd and unified hierarchies are under
// the node's own cgroup, which goes with the node.
func (n *KubeNode) removeCgroups() {
	n.Kill()
	var roots []string
	for _, h := range cgroupV1 {
		roots = append(roots, filepath.Join("/sys/fs/cgroup", h, ownCgroup(h), n.cgroup))
	}
	for _, root := range roots {
		removeCgroupTree(root)
	}
}
