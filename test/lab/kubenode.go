package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KubeNode is a machine of the kubeadm lab: a lab host (its network
// namespace) plus a mount and UTS namespace of its own, in which /etc,
// /var/lib and /var/log are overlays with a private upper layer,
// /var/lib/kubelet, /var/lib/etcd and /var/lib/containerd real directories,
// and /run a fresh tmpfs. `ip netns exec` cannot host a node (it remounts
// /sys, and the cgroup mounts kubelet needs vanish), so a long-lived holder
// process keeps the namespaces and everything else enters them with nsenter.
// The node's own daemons (containerd, a kubelet under a restart loop like
// systemd's) run inside; a pids cgroup of its own holds them, kubelet's
// --cgroup-root another, so that teardown finds every process by PID.
type KubeNode struct {
	*Host
	dir    string // on the host: upper layers, bind-mount sources, bin/
	cgroup string // kubelet's --cgroup-root, without the slash
	holder *Process
	mntNS  string // the holder's mount namespace (/proc/PID/ns/mnt link)
	daemon []*Process
}

// cgroupV1 are the hierarchies kubelet wants its cgroup root in.
var cgroupV1 = []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "systemd", "blkio", "devices", "freezer"}

// holderScript runs as the node's first process, inside its new mount and
// UTS namespaces: it builds the node's file system and then sleeps.
const holderScript = `set -e
hostname "$NODE"
for d in etc lib log; do mkdir -p "$DIR/$d.up" "$DIR/$d.wk"; done
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$DIR/etc.up,workdir=$DIR/etc.wk" /etc
mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$DIR/lib.up,workdir=$DIR/lib.wk" /var/lib
mount -t overlay overlay -o "lowerdir=/var/log,upperdir=$DIR/log.up,workdir=$DIR/log.wk" /var/log
for d in kubelet etcd containerd; do mkdir -p "$DIR/$d" "/var/lib/$d"; mount --bind "$DIR/$d" "/var/lib/$d"; done
mount -t tmpfs -o mode=755 tmpfs /run
mount --make-rshared /
echo ready
exec sleep infinity
`

// AddKubeNode makes a lab host into a kubeadm node; hosts is the /etc/hosts
// text every node gets (each node's name resolves).
func (l *Lab) AddKubeNode(h *Host, hosts string) (*KubeNode, error) {
	dir, err := l.daemonDir("kube-"+h.Name, "root")
	if err != nil {
		return nil, err
	}
	n := &KubeNode{Host: h, dir: dir, cgroup: l.Prefix + "-" + h.Name}
	l.mu.Lock()
	l.stops = append(l.stops, n.teardown) // runs before the directory's removal
	l.mu.Unlock()
	if err := n.makeCgroups(); err != nil {
		return nil, err
	}
	for _, d := range []string{"bin", "etc.up"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	base, _ := os.ReadFile("/etc/hosts")
	if err := os.WriteFile(filepath.Join(dir, "etc.up", "hosts"), append(base, hosts...), 0o644); err != nil {
		return nil, err
	}
	if _, err := h.Exec("sysctl", "-qw", "net.ipv4.ip_forward=1"); err != nil { // kubeadm's preflight wants it; per namespace
		return nil, err
	}
	return n, n.boot()
}

// boot starts the node's holder, which builds its file system (the upper
// layers and directories on the host keep what an earlier life wrote). It
// joins the node's pids cgroup before anything else: all it starts
// (containerd, shims, kubelet) is found there.
func (n *KubeNode) boot() error {
	cmd := []string{"sh", "-c", `echo $$ > "$1/cgroup.procs" && exec nsenter --net=/run/netns/"$2" -- unshare --mount --uts --propagation private sh -c "$3"`,
		"holder", n.sysCgroup("pids"), n.NS, holderScript}
	p, err := n.lab.start("node-"+n.Name, n.Name, n.lab.Logf, []string{"NODE=" + n.Name, "DIR=" + n.dir}, cmd)
	if err != nil {
		return err
	}
	n.holder = p
	if _, err := p.WaitLine(30*time.Second, 0, "ready"); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	n.mntNS, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", p.PID()))
	return err
}

// nsenter is the command prefix that runs a program inside the node.
func (n *KubeNode) nsenter() []string {
	return []string{"nsenter", "-t", strconv.Itoa(n.holder.PID()), "-m", "-u", "-n", "--"}
}

// Path is PATH inside the node: its bin/ (the systemctl shim, kubelet,
// kubeadm) first.
func (n *KubeNode) Path() string {
	return "PATH=" + filepath.Join(n.dir, "bin") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
}

// Run runs a command inside the node and returns its standard output;
// standard error goes into the error when it fails.
func (n *KubeNode) Run(args ...string) (string, error) {
	argv := append(n.nsenter(), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{n.Path(), "HOME=/root"}
	return output(cmd, n.Name, args)
}

// StartIn starts a long-running program inside the node; its output lines
// are kept, and logged when log is set.
func (n *KubeNode) StartIn(name string, log bool, args ...string) (*Process, error) {
	var logf func(string, ...any)
	if log {
		logf = n.lab.Logf
	}
	p, err := n.lab.start(name+"-"+n.Name, n.Name, logf, []string{n.Path(), "HOME=/root"}, append(n.nsenter(), args...))
	if err == nil {
		n.daemon = append(n.daemon, p)
	}
	return p, err
}

// WriteFile writes a file into the node's file system (through its mount
// namespace: /etc and /var/lib are overlays there).
func (n *KubeNode) WriteFile(path string, data []byte, mode os.FileMode) error {
	argv := append(n.nsenter(), "sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"`, "write", path, strconv.FormatUint(uint64(mode.Perm()), 8))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(string(data))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("writing %s in %s: %w: %s", path, n.Name, err, out)
	}
	return nil
}

// ReadFile reads a file of the node's file system.
func (n *KubeNode) ReadFile(path string) ([]byte, error) {
	out, err := n.Run("cat", path)
	return []byte(out), err
}

// Bin is the node's bin directory on the host (first on its PATH).
func (n *KubeNode) Bin() string { return filepath.Join(n.dir, "bin") }

func (n *KubeNode) sysCgroup(hier string) string {
	return filepath.Join("/sys/fs/cgroup", hier, n.cgroup+"-sys")
}

// makeCgroups creates kubelet's cgroup root in every v1 hierarchy (cpuset
// needs its cpus and mems copied from the parent) and the node's own pids
// cgroup.
func (n *KubeNode) makeCgroups() error {
	for _, h := range cgroupV1 {
		dir := filepath.Join("/sys/fs/cgroup", h, n.cgroup)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if h != "cpuset" {
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuset", f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return err
			}
		}
	}
	return os.MkdirAll(n.sysCgroup("pids"), 0o755)
}

// PowerOff ends every process of the node at once (SIGKILL to each PID in
// its cgroups: containers, kubelet, containerd, the holder), as a machine
// losing power does; the node's files stay.
func (n *KubeNode) PowerOff() {
	for i := 0; i < 100; i++ {
		pids := n.pids()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range append(n.daemon, n.holder) {
		if p != nil {
			p.Kill()
		}
	}
	n.daemon, n.holder = nil, nil
}

// pids lists the processes of the node: those in its mount namespace
// (kubelet moves itself out of the cgroup it was started in) and those in
// its cgroups (containers have mount namespaces of their own).
func (n *KubeNode) pids() []int {
	var out []int
	if n.mntNS != "" {
		procs, _ := os.ReadDir("/proc")
		for _, d := range procs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			if ns, err := os.Readlink("/proc/" + d.Name() + "/ns/mnt"); err == nil && ns == n.mntNS {
				out = append(out, pid)
			}
		}
	}
	for _, root := range []string{n.sysCgroup("pids"), filepath.Join("/sys/fs/cgroup/pids", n.cgroup)} {
		out = append(out, cgroupPIDs(root)...)
	}
	return out
}

// cgroupPIDs lists the processes in the cgroup root and its children.
func cgroupPIDs(root string) []int {
	var out []int
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(path)
		out = append(out, parsePIDs(b)...)
		return nil
	})
	return out
}

// parsePIDs parses whitespace-separated PIDs.
func parsePIDs(b []byte) []int {
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// teardown powers the node off and removes its cgroups (kubelet's
// sub-cgroups, in every v1 hierarchy and in unified/, depth first).
func (n *KubeNode) teardown() {
	n.PowerOff()
	roots := []string{n.sysCgroup("pids"), filepath.Join("/sys/fs/cgroup/unified", n.cgroup)}
	for _, h := range cgroupV1 {
		roots = append(roots, filepath.Join("/sys/fs/cgroup", h, n.cgroup))
	}
	for _, root := range roots {
		removeCgroupTree(root)
	}
}

// removeCgroupTree removes a cgroup directory and its children, deepest
// first (a cgroup directory is removed by rmdir, never by unlinking files).
func removeCgroupTree(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		for try := 0; try < 20; try++ {
			if err := syscall.Rmdir(dirs[i]); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// PIDsOf lists the node's processes whose command line contains part.
func (n *KubeNode) PIDsOf(part string) []int {
	var out []int
	for _, pid := range n.pids() {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(cmdline), part) {
			out = append(out, pid)
		}
	}
	return out
}
