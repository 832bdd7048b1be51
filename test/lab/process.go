package lab

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a program started inside a host, with its output kept in lines.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	code int

	mu    sync.Mutex
	lines []string
	times []time.Time   // when each line came
	cond  chan struct{} // closed and replaced on every new line
}

// Start runs args in the host's namespace with exactly env as environment
// (plus PATH). Output lines go to the lab's Logf too, prefixed by name.
func (h *Host) Start(name string, env []string, args ...string) (*Process, error) {
	return h.start(name, h.lab.Logf, env, args)
}

// StartQuiet is Start for a chatty program (kube-apiserver, etcd): its lines
// are kept (Output) but not sent to the lab's Logf.
func (h *Host) StartQuiet(name string, env []string, args ...string) (*Process, error) {
	return h.start(name, nil, env, args)
}

func (h *Host) start(name string, logf func(string, ...any), env, args []string) (*Process, error) {
	argv := append([]string{"ip", "netns", "exec", h.NS}, args...)
	if len(h.cgroups) > 0 {
		// A shell joins the cgroups, then becomes ip netns exec (which
		// mounts a /sys of its own, without the cgroup file systems), which
		// becomes the program: all it allocates is charged there.
		script := ""
		for _, dir := range h.cgroups {
			script += "echo $$ > " + filepath.Join(dir, "cgroup.procs") + " || exit 125; "
		}
		argv = append([]string{"sh", "-c", script + `exec "$@"`, "sh"}, argv...)
	}
	return h.lab.start(name, h.Name, logf, env, argv)
}

// JoinCgroup makes every process started on the host from now on start in
// the cgroup v1 directory dir (a shell writes itself into it, then execs
// the program), as a systemd unit's processes are born in its slice. Call
// it before anything starts on the host concurrently.
func (h *Host) JoinCgroup(dir string) { h.cgroups = append(h.cgroups, dir) }

// start runs argv (a program that enters the host's namespaces and then
// replaces itself with the real one: ip netns exec, nsenter) and keeps it
// in the lab's processes.
func (l *Lab) start(name, host string, logf func(string, ...any), env, argv []string) (*Process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &Process{Name: name, cmd: cmd, done: make(chan struct{}), cond: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s in %s: %w", name, host, err)
	}
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	readDone := make(chan struct{})
	go func() { p.read(pr, logf); close(readDone) }()
	go func() {
		_ = cmd.Wait() // the exit code below says what happened
		p.code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.code = 128 + int(ws.Signal())
		}
		pw.Close()
		<-readDone // every line is in before done closes
		close(p.done)
	}()
	return p, nil
}

func (p *Process) read(r io.Reader, logf func(string, ...any)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if logf != nil {
			logf("%s: %s", p.Name, line)
		}
		p.mu.Lock()
		p.lines = append(p.lines, line)
		p.times = append(p.times, time.Now())
		close(p.cond)
		p.cond = make(chan struct{})
		p.mu.Unlock()
	}
}

// PID is the process id (ip netns exec replaces itself with the program).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Kill ends the process with SIGKILL (if it still runs) and waits for it.
func (p *Process) Kill() {
	if !p.Running() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Wait waits up to d for the process to exit and returns its exit code
// (128+signal when a signal ended it).
func (p *Process) Wait(d time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.code, nil
	case <-time.After(d):
		return 0, fmt.Errorf("%s still running after %s", p.Name, d)
	}
}

// Output returns every line so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// WaitLine waits up to d for an output line, after the first skip lines,
// that contains every one of parts. It returns the line's index.
func (p *Process) WaitLine(d time.Duration, skip int, parts ...string) (int, error) {
	deadline := time.After(d)
	for {
		i, cond := p.find(skip, parts)
		if i >= 0 {
			return i, nil
		}
		select {
		case <-cond:
		case <-p.done:
			if i, _ := p.find(skip, parts); i >= 0 {
				return i, nil
			}
			return -1, fmt.Errorf("%s exited (code %d) before a line with %q", p.Name, p.code, parts)
		case <-deadline:
			return -1, fmt.Errorf("no line with %q from %s within %s", parts, p.Name, d)
		}
	}
}

// find returns the index of the first matching line (or -1) and the channel
// closed by the next line.
func (p *Process) find(skip int, parts []string) (int, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := skip; i < len(p.lines); i++ {
		if containsAll(p.lines[i], parts) {
			return i, p.cond
		}
	}
	return -1, p.cond
}

// Lines returns the number of output lines so far.
func (p *Process) Lines() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

func containsAll(s string, parts []string) bool {
	for _, part := range parts {
		if !strings.Contains(s, part) {
			return false
		}
	}
	return true
}

// linesFrom returns a copy of the output lines from index i on.
func (p *Process) linesFrom(i int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i >= len(p.lines) {
		return nil
	}
	return append([]string(nil), p.lines[i:]...)
}

// Line returns output line i.
func (p *Process) Line(i int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lines[i]
}

// LineTime returns when output line i came.
func (p *Process) LineTime(i int) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.times[i]
}

// LinesBetween returns the output lines that came in [from, to].
func (p *Process) LinesBetween(from, to time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i, at := range p.times {
		if !at.Before(from) && !at.After(to) {
			out = append(out, p.lines[i])
		}
	}
	return out
}
