// Package sdjob asks systemd, over the system bus, whether the unit this
// process runs in is being restarted: a SIGTERM under systemd comes from
// a stop (systemctl stop, a shutdown, a removal) or from a restart
// (systemctl restart, a package upgrade's try-restart), and only systemd's
// queued job tells them apart. A kubelet's kill, or no system bus, is a
// stop.
package sdjob

import (
	"context"
	"fmt"
	"os"
	"strings"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
)

// restartJobs are the job types whose stop is followed by a start of the
// same unit (a try-restart of an active unit is queued as restart).
var restartJobs = map[string]bool{"restart": true, "try-restart": true}

// RestartQueued says whether systemd has queued a restart of the service
// this process is the main process of, and names the unit.
func RestartQueued(ctx context.Context) (unit string, queued bool, err error) {
	conn, err := sdbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return "", false, fmt.Errorf("the system bus: %w", err)
	}
	defer conn.Close()
	unit, err = conn.GetUnitNameByPID(ctx, uint32(os.Getpid()))
	if err != nil {
		return "", false, fmt.Errorf("our unit: %w", err)
	}
	if !strings.HasSuffix(unit, ".service") {
		return unit, false, nil // a scope: a container's, the kubelet's to stop
	}
	jobs, err := conn.ListJobsContext(ctx)
	if err != nil {
		return unit, false, fmt.Errorf("systemd's jobs: %w", err)
	}
	return unit, Restarting(jobs, unit), nil
}

// Restarting says whether jobs hold a restart of unit.
func Restarting(jobs []sdbus.JobStatus, unit string) bool {
	for _, j := range jobs {
		if j.Unit == unit && restartJobs[j.JobType] {
			return true
		}
	}
	return false
}
