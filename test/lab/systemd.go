package lab

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SystemdNode is a host whose file system is a Debian tree with systemd as
// PID 1: systemd-nspawn boots it into the host's network namespace, so the
// lab's switch, samplers and peers see it as any other host, while its
// units, journal and packages are a real machine's. Each node has its own
// overlay on the shared tree (test/tools/systemd-tree.sh), which survives
// a power-off: a node booted again finds what it had, as a disk would.
type SystemdNode struct {
	*Host
	Root string // the node's file system, as the host sees it
	// Binds are host paths bound into the node at boot ("SRC:DST", read
	// only unless Writable names DST).
	Binds    []string
	Writable map[string]bool
	// APIVFSWritable boots the node with /proc/sys and /sys writable, as a
	// machine's are (the kubelet sets sysctls; nspawn mounts them
	// read-only). The v1 cgroup controllers stay read-only: a unit of the
	// node remounts them (kubeservices.go). Only for nodes whose units must
	// write there: what is written is the host's kernel's.
	APIVFSWritable bool
	// Syscalls are system calls (or @groups) nspawn's filter lets the node
	// make beyond its default list: runc needs the session keyring.
	Syscalls []string

	dir    string // overlay layers and the mount point
	cgroup string // the node's cgroup, in the systemd and unified hierarchies
	nspawn *Process
	leader int    // the node's PID 1, as the host sees it
	start  string // its start time (procStart), against PID reuse
}

// SystemdTreeFromEnv is the tree NOVAEDGE_SYSTEMD_TREE names (make e2e
// builds it with test/tools/systemd-tree.sh).
func SystemdTreeFromEnv() (string, error) {
	tree := os.Getenv("NOVAEDGE_SYSTEMD_TREE")
	if tree == "" {
		return "", errors.New("NOVAEDGE_SYSTEMD_TREE is not set (make e2e sets it; or test/tools/systemd-tree.sh)")
	}
	if _, err := os.Stat(filepath.Join(tree, ".built")); err != nil {
		return "", fmt.Errorf("systemd tree %s: %w", tree, err)
	}
	for _, cmd := range []string{"systemd-nspawn", "nsenter"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return "", err
		}
	}
	return tree, nil
}

// NewSystemdNode prepares h as a systemd node on tree: its overlay mounted,
// its name in /etc/hostname and /etc/hosts (as Debian's installer writes
// them). Nothing runs until Boot. The lab powers it off, unmounts and
// removes it on Close.
func (h *Host) NewSystemdNode(tree string) (*SystemdNode, error) {
	l := h.lab
	dir, err := os.MkdirTemp("", l.Prefix+"-sd-"+h.Name+"-")
	if err != nil {
		return nil, err
	}
	n := &SystemdNode{Host: h, Root: filepath.Join(dir, "root"), dir: dir, cgroup: h.NS}
	l.mu.Lock()
	l.stops = append(l.stops, n.teardown)
	l.mu.Unlock()
	for _, d := range []string{"upper", "work", "root"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", tree, filepath.Join(dir, "upper"), filepath.Join(dir, "work"))
	if err := run("mount", "-t", "overlay", "overlay", "-o", opts, n.Root); err != nil {
		return nil, err
	}
	hosts := "127.0.0.1\tlocalhost\n127.0.1.1\t" + h.Name + "\n\n::1\t\tlocalhost ip6-localhost ip6-loopback\nff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n"
	if err := n.WriteFile("/etc/hosts", []byte(hosts), 0o644); err != nil {
		return nil, err
	}
	return n, n.WriteFile("/etc/hostname", []byte(h.Name+"\n"), 0o644)
}

// WriteFile writes a file into the node's file system (path as the node
// sees it), making its directories.
func (n *SystemdNode) WriteFile(path string, data []byte, mode os.FileMode) error {
	p := filepath.Join(n.Root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		return err
	}
	return os.Chmod(p, mode)
}

// Boot starts the node and waits up to d until systemd says the system is
// running (or degraded: the failed units are in the error's place in the
// log, not a failure of the boot).
func (n *SystemdNode) Boot(d time.Duration) error {
	if n.Running() {
		return fmt.Errorf("%s is running already", n.Name)
	}
	// nspawn makes its payload and supervisor cgroups beside the cgroup it
	// runs in: each node's nspawn runs in a cgroup of its own, or two
	// nodes' systemds would share one tree.
	var mk strings.Builder
	for _, h := range []string{"systemd", "unified"} {
		fmt.Fprintf(&mk, "mkdir -p /sys/fs/cgroup/%[1]s/%[2]s && echo $$ > /sys/fs/cgroup/%[1]s/%[2]s/cgroup.procs && ", h, n.cgroup)
	}
	script := mk.String() + `root=$0 machine=$1 name=$2; shift 2; exec systemd-nspawn -D "$root" --machine="$machine" --hostname="$name" ` +
		`--register=no --keep-unit --network-namespace-path=/run/netns/"$machine" --capability=all --console=passive -q -b "$@"`
	argv := []string{"sh", "-c", script, n.Root, n.NS, n.Name}
	for _, b := range n.Binds {
		_, dst, _ := strings.Cut(b, ":")
		if n.Writable[dst] {
			argv = append(argv, "--bind="+b)
		} else {
			argv = append(argv, "--bind-ro="+b)
		}
	}
	if len(n.Syscalls) > 0 {
		argv = append(argv, "--system-call-filter="+strings.Join(n.Syscalls, " "))
	}
	var env []string
	if n.APIVFSWritable {
		env = append(env, "SYSTEMD_NSPAWN_API_VFS_WRITABLE=1")
	}
	p, err := n.lab.start(n.Name+"/nspawn", n.Name, n.lab.Logf, env, argv)
	if err != nil {
		return err
	}
	n.nspawn = p
	err = Eventually(d, func() error {
		if n.leader == 0 {
			pid, err := childNamed(p.PID(), "systemd")
			if err != nil {
				return err
			}
			start, err := procStart(pid)
			if err != nil {
				return err
			}
			n.leader, n.start = pid, start
		}
		out, _ := n.Exec("systemctl", "is-system-running")
		if s := strings.TrimSpace(out); s != "running" && s != "degraded" {
			return fmt.Errorf("%s: system %q", n.Name, s)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("booting %s: %w", n.Name, err)
	}
	if out, _ := n.Exec("systemctl", "--failed", "--no-legend", "--plain"); strings.TrimSpace(out) != "" {
		n.lab.Logf("%s booted degraded; failed units:\n%s", n.Name, out)
	}
	return nil
}

// Running says whether the node's systemd runs.
func (n *SystemdNode) Running() bool {
	if n.leader == 0 {
		return false
	}
	s, err := procStart(n.leader)
	return err == nil && s == n.start
}

// Exec runs a command inside the node (its mount, UTS, IPC, network and
// PID namespaces: what its units see) with a clean environment.
func (n *SystemdNode) Exec(args ...string) (string, error) {
	return n.ExecInput(nil, args...)
}

// ExecInput is Exec with stdin as the command's standard input.
func (n *SystemdNode) ExecInput(stdin io.Reader, args ...string) (string, error) {
	argv, err := n.inside(args)
	if err != nil {
		return "", err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = stdin
	return output(cmd, n.Name, args)
}

// StartIn starts a long-running command inside the node; its output lines
// are kept, and logged when log is set.
func (n *SystemdNode) StartIn(name string, log bool, args ...string) (*Process, error) {
	argv, err := n.inside(args)
	if err != nil {
		return nil, err
	}
	var logf func(string, ...any)
	if log {
		logf = n.lab.Logf
	}
	return n.lab.start(name+"-"+n.Name, n.Name, logf, nil, argv)
}

// inside is the command line that runs args inside the node.
func (n *SystemdNode) inside(args []string) ([]string, error) {
	if !n.Running() {
		return nil, fmt.Errorf("%s is not running", n.Name)
	}
	return append([]string{"nsenter", "-t", strconv.Itoa(n.leader), "-m", "-u", "-i", "-n", "-p", "--",
		"env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8",
		"SYSTEMD_COLORS=0", "SYSTEMD_PAGER="}, args...), nil
}

// Journal is the node's journal for the given journalctl filters (e.g.
// "-u", "novaedge-cpvip"), with precise timestamps.
func (n *SystemdNode) Journal(filters ...string) (string, error) {
	return n.Exec(append([]string{"journalctl", "--no-pager", "-o", "short-precise"}, filters...)...)
}

// MainPID is a unit's main process as the host sees it (0 when it has none).
func (n *SystemdNode) MainPID(unit string) (int, error) {
	out, err := n.Exec("systemctl", "show", "-P", "MainPID", unit)
	if err != nil {
		return 0, err
	}
	inner, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || inner == 0 {
		return 0, err
	}
	// The node's PID namespace numbers it differently: find the process
	// of the node's namespace whose innermost PID is inner.
	for _, pid := range nsPIDs(n.NS) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			// Two levels, the host's and the node's: not a process of a
			// container inside the node.
			if f := strings.Fields(strings.TrimPrefix(line, "NSpid:")); strings.HasPrefix(line, "NSpid:") && len(f) == 2 && f[1] == strconv.Itoa(inner) {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no process with PID %d in the node", n.Name, inner)
}

// Poweroff shuts the node down as `systemctl poweroff` does (units stop in
// order) and waits up to d for it to be gone.
func (n *SystemdNode) Poweroff(d time.Duration) error {
	if _, err := n.Exec("systemctl", "poweroff"); err != nil {
		return err
	}
	if _, err := n.nspawn.Wait(d); err != nil {
		return fmt.Errorf("%s did not power off: %w", n.Name, err)
	}
	n.leader = 0
	return nil
}

// Kill cuts the node's power: every process of it is killed at once.
func (n *SystemdNode) Kill() {
	if n.Running() {
		_ = syscall.Kill(n.leader, syscall.SIGKILL) // PID 1 of the namespace: all of it goes
	}
	if n.nspawn != nil {
		_, _ = n.nspawn.Wait(10 * time.Second)
	}
	n.leader = 0
}

// teardown ends the node (the lab may have killed nspawn already: its PID 1
// goes on without it, so the node is killed by that PID) and removes what
// it left: its overlay mount and layers, cgroups, nspawn's run directory.
func (n *SystemdNode) teardown() {
	n.Kill()
	// A node whose PID 1 was never found (a boot that timed out): its
	// processes are in its cgroup.
	for range 20 {
		pids := cgroupPIDs(filepath.Join("/sys/fs/cgroup/systemd", n.cgroup))
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	lock := nspawnLock(n.Root)
	for range 100 { // the namespace's processes go once their PID 1 has
		if len(nsPIDs(n.NS)) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := run("umount", n.Root); err != nil {
		_ = run("umount", "-l", n.Root)
	}
	for _, h := range []string{"systemd", "unified"} {
		removeCgroupTree(filepath.Join("/sys/fs/cgroup", h, n.cgroup))
	}
	_ = os.RemoveAll(filepath.Join("/run/systemd/nspawn/propagate", n.NS))
	if lock != "" {
		_ = os.Remove(lock)
	}
	_ = os.RemoveAll(n.dir)
}

// childNamed is the PID of parent's child whose command name is comm.
func childNamed(parent int, comm string) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", parent, parent))
	if err != nil {
		return 0, err
	}
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		if c, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(c)) == comm {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no child %q of %d yet", comm, parent)
}

// nspawnLock is the lock file nspawn keeps for the tree at root while it
// runs (named for the tree's device and inode); a killed nspawn leaves it.
func nspawnLock(root string) string {
	st, err := os.Stat(root)
	if err != nil {
		return ""
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("/run/systemd/nspawn/locks/inode-%d:%d", s.Dev, s.Ino)
}
