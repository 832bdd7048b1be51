package lab

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

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

// ownCgroup is this process's cgroup in hierarchy h ("/" when at its
// root): a node sees each v1 controller's hierarchy from there, so what it
// creates at its "/X" is at own/X on the host.
func ownCgroup(h string) string {
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && f[1] == h {
			return f[2]
		}
	}
	return "/"
}

// CgroupDir is the cgroup v1 directory name of controller's hierarchy,
// under this process's own cgroup there (so that a cgroup removed gives its
// processes back to the test's).
func CgroupDir(controller, name string) string {
	return filepath.Join("/sys/fs/cgroup", controller, ownCgroup(controller), name)
}

// labCgroups lists the cgroups of every hierarchy named PREFIX-*, at the
// top or under this process's own cgroup (where nodes create theirs).
func labCgroups(prefix string) []string {
	out, _ := filepath.Glob("/sys/fs/cgroup/*/" + prefix + "-*")
	hs, _ := os.ReadDir("/sys/fs/cgroup")
	for _, h := range hs {
		if own := ownCgroup(h.Name()); own != "/" {
			more, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", h.Name(), own, prefix+"-*"))
			out = append(out, more...)
		}
	}
	return out
}

// CopyUncached copies the file src to dst (mode 0755) and drops dst's
// pages from the page cache: the first process to read them is charged for
// them (cgroup v1 charges a page cache page to the cgroup that faulted it
// in), as a node's own copy of a program is on a real node.
func CopyUncached(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil { // clean pages: DONTNEED drops only those
		out.Close()
		return err
	}
	if err := unix.Fadvise(int(out.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
