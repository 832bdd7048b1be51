package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BIRD is BIRD 2 running in a host in the foreground with its own control
// socket; its kernel protocol installs what it learns.
type BIRD struct {
	host *Host
	sock string
	proc *Process
}

// StartBIRD starts bird with conf.
func (h *Host) StartBIRD(conf string) (*BIRD, error) {
	dir, err := os.MkdirTemp("", h.lab.Prefix+"-bird-")
	if err != nil {
		return nil, err
	}
	h.lab.mu.Lock()
	h.lab.stops = append(h.lab.stops, func() { os.RemoveAll(dir) })
	h.lab.mu.Unlock()
	path := filepath.Join(dir, "bird.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	if out, err := exec.Command("chown", "-R", "bird:bird", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("chown %s: %w: %s", dir, err, out)
	}
	b := &BIRD{host: h, sock: filepath.Join(dir, "bird.ctl")}
	b.proc, err = h.Start(h.Name+"-bird", nil, "bird", "-f", "-c", path, "-s", b.sock, "-P", filepath.Join(dir, "bird.pid"))
	if err != nil {
		return nil, err
	}
	return b, waitFile(b.sock, 10*1e9)
}

// Birdc runs one birdc command.
func (b *BIRD) Birdc(cmd ...string) (string, error) {
	return b.host.Exec(append([]string{"birdc", "-s", b.sock}, cmd...)...)
}
