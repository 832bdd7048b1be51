package lab

import (
	"os"
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
	dir, err := h.lab.daemonDir("bird", "bird")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "bird.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
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
