package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/novaedge/cpvip/internal/config"
)

// envFileRetry is how often run tries an env file it may not read again;
// envFileRemind how often it says so again.
const (
	envFileRetry  = 2 * time.Second
	envFileRemind = time.Minute
)

// loadRunConfig is loadConfig for run, except that an env file this
// process may not read (the static pod's secrets file owned by another
// user: one from an older install was nobody's) is waited for, with a
// message that says how to fix it, instead of an exit the kubelet would
// restart in a back-off loop: the daemon starts within envFileRetry of the
// fix. SIGTERM ends the wait.
func loadRunConfig(args []string, stderr io.Writer) (*config.Config, *config.Flags, []string, int) {
	fl, code := parseFlags("run", args, stderr, nil)
	if fl == nil {
		return nil, nil, nil, code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var told time.Time
	for {
		cfg, warnings, err := config.Load(fl)
		switch {
		case err == nil:
			return cfg, fl, warnings, -1
		case !errors.Is(err, fs.ErrPermission) || fl.EnvFile == "":
			fmt.Fprintf(stderr, "novaedge-cpvip: %v\n", err)
			return nil, nil, nil, exitConfig
		case time.Since(told) >= envFileRemind:
			told = time.Now()
			fmt.Fprintf(stderr, "novaedge-cpvip: %v: %s; waiting for it (checking every %v)\n", err, unreadable(fl.EnvFile), envFileRetry)
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(stderr, "novaedge-cpvip: stopped while waiting for the env file: nothing was bound")
			return nil, nil, nil, exitOK
		case <-time.After(envFileRetry):
		}
	}
}

// unreadable says who owns path and how to let this process read it.
func unreadable(path string) string {
	uid, gid := os.Getuid(), os.Getgid()
	owner := "this process"
	if st, err := os.Stat(path); err == nil {
		if s, ok := st.Sys().(*syscall.Stat_t); ok {
			owner = fmt.Sprintf("it is owned by %d:%d, mode %04o, and this process", s.Uid, s.Gid, st.Mode().Perm())
		}
	}
	return fmt.Sprintf("%s runs as %d:%d; on this node, as root: chown %d:%d %s && chmod 0600 %s, or keep it root's and let this group read it: chgrp %d %s && chmod 0640 %s (the package's way for the service; the static pod runs as its own id; a file from an older install may belong to nobody, 65534, or to root)",
		owner, uid, gid, uid, gid, path, path, gid, path, path)
}
