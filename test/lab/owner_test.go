package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestSweepRemovesWhatADeadOwnerLeft: a lab whose owner record names a
// process that is gone (here: our PID with another start time, as after
// PID reuse) loses its namespaces and the processes in them to the next
// lab's sweep; a lab whose owner runs is left alone.
func TestSweepRemovesWhatADeadOwnerLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	live, err := New(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead := "cpvdead" + fmt.Sprint(os.Getpid()%10000)
	ns := dead + "-n1"
	if err := run("ip", "netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run("ip", "netns", "del", ns); release(dead) }()
	if err := os.WriteFile(filepath.Join(ownerDir, dead), fmt.Appendf(nil, "%d not-its-start-time\n", os.Getpid()), 0o644); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("ip", "netns", "exec", ns, "sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	time.Sleep(200 * time.Millisecond) // ip netns exec has become sleep

	sweep(t.Logf)

	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = sleeper.Process.Kill()
		t.Fatal("the process in the dead lab's namespace still runs")
	}
	if left := namespaces(dead + "-"); len(left) > 0 {
		t.Fatalf("namespaces left: %v", left)
	}
	if _, err := os.Stat(filepath.Join(ownerDir, dead)); !os.IsNotExist(err) {
		t.Fatalf("owner record left: %v", err)
	}
	if !slices.Contains(namespaces(live.Prefix+"-"), live.sw) {
		t.Fatal("the live lab's switch was swept")
	}
}
