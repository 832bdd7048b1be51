package config

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReloadReadsTheFileAgain: as systemd runs us, the file's values are in
// the environment (EnvironmentFile=) and named by --env-file; a reload takes
// the file's new values, including a removed one, while a value the
// environment set otherwise and flags keep outranking the file.
func TestReloadReadsTheFileAgain(t *testing.T) {
	isolateEnv(t)
	path := filepath.Join(t.TempDir(), "cpvip.env")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32\nNOVAEDGE_CP_VIP_PRIORITY=150\nNOVAEDGE_CP_VIP_FAIL_THRESHOLD=5\nOTHER=x\n")
	t.Setenv("NOVAEDGE_CP_VIP_ADDRESS", "192.0.2.100/32") // EnvironmentFile=
	t.Setenv("NOVAEDGE_CP_VIP_PRIORITY", "150")
	t.Setenv("NOVAEDGE_CP_VIP_FAIL_THRESHOLD", "5")
	t.Setenv("NOVAEDGE_CP_VIP_VRID", "7") // set by the environment, not the file
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fl := BindFlags(fs)
	if err := fs.Parse([]string{"--env-file", path, "--rise-threshold", "2"}); err != nil {
		t.Fatal(err)
	}
	old, _, err := Load(fl)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReloader(fl)
	write("NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32\nNOVAEDGE_CP_VIP_PRIORITY=120\nNOVAEDGE_CP_VIP_VRID=9\nNOVAEDGE_CP_VIP_RISE_THRESHOLD=4\n")
	c, err := r.Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.Priority != 120 || c.FailThreshold != 3 || c.VRID != 7 || c.RiseThreshold != 2 {
		t.Fatalf("priority %d (want 120, the file's new value), fail threshold %d (want 3, removed from the file), vrid %d (want 7, the environment's), rise %d (want 2, the flag's)",
			c.Priority, c.FailThreshold, c.VRID, c.RiseThreshold)
	}
	live, restart := Changes(old, c)
	if !slices.Equal(live, []string{"NOVAEDGE_CP_VIP_FAIL_THRESHOLD", "NOVAEDGE_CP_VIP_PRIORITY"}) || len(restart) != 0 {
		t.Fatalf("changes: live %v, restart %v", live, restart)
	}
	write("NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32\nNOVAEDGE_CP_VIP_HEALTH_TIMEOUT=1000h\n")
	if _, err := r.Load(); err == nil || !strings.Contains(err.Error(), "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT") {
		t.Fatalf("invalid file: error %v, want one naming the variable", err)
	}
	write("NOVAEDGE_CP_VIP_ADDRESS=192.0.2.101/32\n")
	c, err = r.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, restart := Changes(old, c); !slices.Contains(restart, "NOVAEDGE_CP_VIP_ADDRESS") {
		t.Fatalf("restart %v, want the address", restart)
	}
}

// TestReloadValidatesWhatItLeavesRunning: a file valid on its own whose
// live values do not fit the restart-only ones that stay running is
// refused as a whole, naming both. Issue 32 finding 4: PRIORITY=1 was
// applied while the running FAIL_OPEN=true stayed, and a healthy node
// looked fail open.
func TestReloadValidatesWhatItLeavesRunning(t *testing.T) {
	running, err := LoadMap(map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_PRIORITY": "150", "NOVAEDGE_CP_VIP_FAIL_OPEN": "true"})
	if err != nil {
		t.Fatal(err)
	}
	next, err := LoadMap(map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_PRIORITY": "1", "NOVAEDGE_CP_VIP_FAIL_OPEN": "false"})
	if err != nil {
		t.Fatalf("the file alone is valid: %v", err)
	}
	merged, _, _, err := Reload(running, next)
	if err == nil || merged != nil {
		t.Fatalf("reload applied priority 1 beside the running fail open: %+v", merged)
	}
	for _, want := range []string{"NOVAEDGE_CP_VIP_PRIORITY", "NOVAEDGE_CP_VIP_FAIL_OPEN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	next.Priority = 120
	merged, live, restart, err := Reload(running, next)
	if err != nil || merged.Priority != 120 || !merged.FailOpen || !slices.Equal(live, []string{"NOVAEDGE_CP_VIP_PRIORITY"}) || !slices.Equal(restart, []string{"NOVAEDGE_CP_VIP_FAIL_OPEN"}) {
		t.Fatalf("a fitting reload: %v %+v live %v restart %v", err, merged, live, restart)
	}
}
