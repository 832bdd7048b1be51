package sdjob

import (
	"testing"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
)

// A restart or try-restart of our unit is a restart; a stop, a start, or
// another unit's restart is not.
func TestRestarting(t *testing.T) {
	const unit = "novaedge-cpvip.service"
	for _, tc := range []struct {
		jobs []sdbus.JobStatus
		want bool
	}{
		{nil, false},
		{[]sdbus.JobStatus{{Unit: unit, JobType: "stop"}}, false},
		{[]sdbus.JobStatus{{Unit: unit, JobType: "restart"}}, true},
		{[]sdbus.JobStatus{{Unit: unit, JobType: "try-restart"}}, true},
		{[]sdbus.JobStatus{{Unit: "kubelet.service", JobType: "restart"}, {Unit: unit, JobType: "stop"}}, false},
		{[]sdbus.JobStatus{{Unit: "shutdown.target", JobType: "start"}, {Unit: unit, JobType: "stop"}}, false},
	} {
		if got := Restarting(tc.jobs, unit); got != tc.want {
			t.Errorf("Restarting(%v) = %v, want %v", tc.jobs, got, tc.want)
		}
	}
}
