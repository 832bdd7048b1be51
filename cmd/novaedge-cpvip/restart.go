package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/sdjob"
)

// restartAsk bounds the question to systemd whether a SIGTERM is a
// restart: within it, the VIP's lifetime (RESTART_WAIT less half a
// second) still outlasts the restart.
const restartAsk = time.Second

// stopper turns SIGTERM and SIGINT into the end of the run. A stop cancels
// the run's context: the agent hands the VIP over (or withdraws the
// route) and spreading closes what it carries. A restart that systemd has
// queued for our unit (systemctl restart, a package upgrade's
// try-restart), in L2 mode, is not a stop: the run ends at once as a
// SIGKILL would end it, the VIP left bound on its lifetime and the
// connections spreading carries left in systemd's descriptor store, and
// the next run resumes both (docs/vrrp.md#resuming-after-a-kill): no
// client of the VIP sees it. A restart that does not come back within
// RESTART_WAIT costs what a dead host does.
type stopper struct {
	cancel  context.CancelFunc
	restart atomic.Pointer[restartInPlace]
	log     *slog.Logger
}

// restartInPlace is what a queued restart ends: set once the run is up.
type restartInPlace struct {
	detach func() // leave the carried connections to the next run, and return once done
	// same says whether the next run will hold the same VIP in the same
	// group (the env file read again: the same address, interface, VRID,
	// mode and peers), and if not, why: a restart that changes them, or
	// whose file the next run would refuse, hands the VIP over instead.
	same func() (bool, string)
}

// identity are the settings a restart in place must leave as they are:
// the next run resumes only the VIP it finds bound, in its own group.
var identity = map[string]bool{
	"NOVAEDGE_CP_VIP_ADDRESS": true, "NOVAEDGE_CP_VIP_INTERFACE": true, "NOVAEDGE_CP_VIP_VRID": true,
	"NOVAEDGE_CP_VIP_MODE": true, "NOVAEDGE_CP_VIP_PEERS": true,
}

// sameGroup compares the running configuration with the env file as the
// next run will read it.
func sameGroup(running *config.Config, r *config.Reloader) func() (bool, string) {
	return func() (bool, string) {
		if !r.HasFile() {
			return true, ""
		}
		next, err := r.Load()
		if err != nil {
			return false, "the next run would refuse the env file: " + err.Error()
		}
		_, restart := config.Changes(running, next)
		var changed []string
		for _, v := range restart {
			if identity[v] {
				changed = append(changed, v)
			}
		}
		if len(changed) > 0 {
			return false, "the env file changes " + strings.Join(changed, ", ")
		}
		return true, ""
	}
}

// newStopper starts watching the signals; cancel ends the run on a stop.
func newStopper(cancel context.CancelFunc, log *slog.Logger) *stopper {
	s := &stopper{cancel: cancel, log: log}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go s.wait(sigs)
	return s
}

func (s *stopper) wait(sigs chan os.Signal) {
	sig := <-sigs
	if r := s.restart.Load(); r != nil && sig == syscall.SIGTERM && os.Getenv("INVOCATION_ID") != "" {
		ctx, cancel := context.WithTimeout(context.Background(), restartAsk)
		unit, queued, err := sdjob.RestartQueued(ctx)
		cancel()
		switch {
		case err != nil:
			s.log.Warn("Cannot tell a restart from a stop: stopping (the VIP is handed over)", "error", err)
		case queued:
			if same, why := r.same(); !same {
				s.log.Info("Restarting with another VIP or group: handing the VIP over", "unit", unit, "reason", why)
				break
			}
			s.log.Info("Restarting: the VIP stays bound for the next run, the connections spreading carries stay with systemd", "unit", unit)
			r.detach()
			os.Exit(exitOK)
		}
	}
	s.cancel()
}
