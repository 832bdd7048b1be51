package lab

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ownerDir holds one file per lab, named for its prefix, that says which
// process made it (PID and start time). A test binary that is killed — a
// timeout panic, SIGKILL at the end of a CI job — runs no cleanup; the next
// lab sweeps what such a process left: the processes in its namespaces
// (by PID) and the namespaces. A lab without a file is never touched.
const ownerDir = "/run/novaedge-cpvip-lab"

// claim records this process as the owner of prefix's namespaces.
func claim(prefix string) error {
	me, err := procStart(os.Getpid())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(ownerDir, prefix), fmt.Appendf(nil, "%d %s\n", os.Getpid(), me), 0o644)
}

// release forgets prefix: its namespaces are gone.
func release(prefix string) { _ = os.Remove(filepath.Join(ownerDir, prefix)) }

// sweep removes what every lab whose owner is no longer running left: the
// processes in its namespaces and in its kubeadm nodes' cgroups (by PID),
// those cgroups, and the namespaces.
func sweep(logf func(string, ...any)) {
	files, _ := os.ReadDir(ownerDir)
	for _, f := range files {
		prefix := f.Name()
		b, err := os.ReadFile(filepath.Join(ownerDir, prefix))
		if err != nil || alive(string(b)) {
			continue
		}
		nss := namespaces(prefix + "-")
		cgroups := labCgroups(prefix)
		for range 20 { // a process may fork while we kill: until none is left
			var pids []int
			for _, ns := range nss {
				pids = append(pids, nsPIDs(ns)...)
			}
			for _, root := range cgroups {
				pids = append(pids, cgroupPIDs(root)...)
			}
			if len(pids) == 0 {
				break
			}
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(50 * time.Millisecond)
		}
		for _, root := range cgroups {
			removeCgroupTree(root)
		}
		unmountSystemdNodes(prefix)
		for _, ns := range nss {
			_ = run("ip", "netns", "del", ns)
		}
		release(prefix)
		logf("lab %s: its test process died without cleaning up; removed its %d namespaces and %d cgroups", prefix, len(nss), len(cgroups))
	}
}

// alive says whether the owner record "PID START" names a running process.
func alive(record string) bool {
	var pid int
	var start string
	if _, err := fmt.Sscan(record, &pid, &start); err != nil {
		return false
	}
	now, err := procStart(pid)
	return err == nil && now == start
}

// procStart is the process's start time in clock ticks since boot (field 22
// of /proc/PID/stat): with the PID, it tells a process from a later one
// that reuses its PID.
func procStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return fields[19], nil
}

// namespaces lists the named network namespaces starting with prefix.
func namespaces(prefix string) []string {
	out, _ := exec.Command("ip", "netns", "list").Output()
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if name, _, _ := strings.Cut(sc.Text(), " "); strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	return names
}

// nsPIDs lists the processes in the network namespace ns.
func nsPIDs(ns string) []int {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	return parsePIDs(out)
}

// unmountSystemdNodes unmounts the overlays of prefix's systemd nodes
// (NewSystemdNode mounts them under a directory named PREFIX-sd-NODE-*)
// and removes the lab's directories (PREFIX-*: the nodes', the daemons').
func unmountSystemdNodes(prefix string) {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.Contains(f[4], "/"+prefix+"-sd-") {
			continue
		}
		if lock := nspawnLock(f[4]); lock != "" {
			_ = os.Remove(lock)
		}
		_ = run("umount", "-l", f[4])
	}
	props, _ := filepath.Glob("/run/systemd/nspawn/propagate/" + prefix + "-*")
	for _, p := range props {
		_ = os.RemoveAll(p)
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"-*"))
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}
