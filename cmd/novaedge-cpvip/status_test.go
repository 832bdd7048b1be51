package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestStatusAddr(t *testing.T) {
	dir := t.TempDir()
	n := 0
	file := func(body string) string {
		n++
		p := filepath.Join(dir, strconv.Itoa(n)+".env")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		flag, env, want, err string
	}{
		{flag: "127.0.0.1:1", env: file("NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:2\n"), want: "127.0.0.1:1"},
		{env: file("NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:2\n"), want: "127.0.0.1:2"},
		{env: file("NOVAEDGE_CP_VIP_METRICS_ADDR=:9450\n"), want: "127.0.0.1:9450"},
		{env: file("NOVAEDGE_CP_VIP_METRICS_ADDR=0.0.0.0:9450\n"), want: "127.0.0.1:9450"},
		{env: file("NOVAEDGE_CP_VIP_METRICS_ADDR=[::]:9450\n"), want: "127.0.0.1:9450"},
		{env: file("NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32\n"), want: "127.0.0.1:9450"}, // not in the file: the default
		{env: file("NOVAEDGE_CP_VIP_METRICS_ADDR=\n"), err: "is empty"},
		{env: file("NOVAEDGE_CP_VIP_METRICS_ADDR=9450\n"), err: "missing port"},
		{env: file("NOT A LINE\n"), err: "env file"},
		{env: filepath.Join(dir, "missing.env"), err: "reading --env-file"},
	} {
		got, _, err := statusAddr(c.flag, c.env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("statusAddr(%q, %s) = %q, %v; want an error with %q", c.flag, c.env, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("statusAddr(%q, %s) = %q, %v; want %q", c.flag, c.env, got, err, c.want)
		}
	}
}

// TestStatusAddrEnvironmentFirst: as for the daemon, the environment
// beats the env file.
func TestStatusAddrEnvironmentFirst(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cpvip.env")
	if err := os.WriteFile(p, []byte("NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOVAEDGE_CP_VIP_METRICS_ADDR", "127.0.0.1:7777")
	if got, _, err := statusAddr("", p); err != nil || got != "127.0.0.1:7777" {
		t.Errorf("statusAddr = %q, %v; want the environment's 127.0.0.1:7777", got, err)
	}
}
