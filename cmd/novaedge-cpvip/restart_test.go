package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/config"
)

// A restart keeps the VIP for the next run only when the env file, as the
// next run reads it, names the same VIP in the same group: a changed
// health setting still restarts in place; a changed VRID or address, or a
// file the next run would refuse, hands over.
func TestRestartInPlaceOnlyInTheSameGroup(t *testing.T) {
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "NOVAEDGE_") {
			t.Skipf("the environment sets %s", e)
		}
	}
	path := filepath.Join(t.TempDir(), "cpvip.env")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const start = "NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32\nNOVAEDGE_CP_VIP_VRID=51\n"
	write(start)
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fl := config.BindFlags(fs)
	if err := fs.Parse([]string{"--env-file", path}); err != nil {
		t.Fatal(err)
	}
	running, _, err := config.Load(fl)
	if err != nil {
		t.Fatal(err)
	}
	same := sameGroup(running, config.NewReloader(fl))
	for _, tc := range []struct {
		file string
		want bool
		why  string
	}{
		{start, true, ""},
		{start + "NOVAEDGE_CP_VIP_HEALTH_INTERVAL=2s\nNOVAEDGE_CP_VIP_SPREAD=true\nNOVAEDGE_CP_VIP_SPREAD_BACKENDS=192.0.2.11,192.0.2.12\n", true, ""},
		{"NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32\nNOVAEDGE_CP_VIP_VRID=52\n", false, "NOVAEDGE_CP_VIP_VRID"},
		{"NOVAEDGE_CP_VIP_ADDRESS=192.0.2.101/32\nNOVAEDGE_CP_VIP_VRID=51\n", false, "NOVAEDGE_CP_VIP_ADDRESS"},
		{start + "NOVAEDGE_CP_VIP_VRID=300\n", false, "refuse"},
	} {
		write(tc.file)
		got, why := same()
		if got != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("%q: same group %v (%s), want %v (%s)", tc.file, got, why, tc.want, tc.why)
		}
	}
}
