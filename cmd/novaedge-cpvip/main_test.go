package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDispatch(t *testing.T) {
	t.Setenv("NOVAEDGE_CP_VIP_ADDRESS", "")
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"version"}, 0, "novaedge-cpvip dev", ""},
		{[]string{"bogus"}, 2, "", `unknown command "bogus"`},
		{[]string{"check-config", "--vip-address", "192.0.2.100/32", "--vrid", "300"}, 2, "", "invalid NOVAEDGE_CP_VIP_VRID (--vrid)=\"300\": must be 1-255"},
		{[]string{"check-config", "--vip-address", "192.0.2.100/32", "--bgp-password", "s3cret"}, 0, "NOVAEDGE_BGP_PASSWORD=<redacted>", "configuration is valid"},
		{[]string{"check-config", "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"--vrid", "0"}, 2, "", "NOVAEDGE_CP_VIP_ADDRESS"}, // run is the default command
		{[]string{"check-config", "-h"}, 0, "", "-vip-address"},
		{[]string{"--help"}, 0, "manifest pod [flags]", ""}, // the commands, not run's flags
		{[]string{"-h"}, 0, "Usage:", ""},
		{[]string{"run", "-h"}, 0, "", "-vip-address"},
		{[]string{"migrate", "kube-vip", "../../internal/kubevip/testdata/bgp-daemonset.yaml"}, 0, "NOVAEDGE_BGP_PEERS=198.51.100.1@65001?password=s3cret,198.51.100.2@65001?password=other%26pw", "dropped: bgp_keepalive_interval"},
		{[]string{"migrate", "kube-vip", "/nonexistent.yaml"}, 1, "", "no such file"},
		{[]string{"migrate", "keepalived", "x"}, 2, "", "Usage: novaedge-cpvip migrate kube-vip FILE"},
		{[]string{"status", "--metrics-addr", "127.0.0.1:1"}, 1, "", "is novaedge-cpvip running"},
		{[]string{"manifest", "pod", "--vip-address", "192.0.2.100/32", "--bgp-password", "s3cret"}, 0, "image: ghcr.io/novaedge/cpvip:dev", "NOVAEDGE_BGP_PASSWORD left out of the pod's env"},
		{[]string{"manifest", "pod", "--flavour", "k3s", "--vip-address", "192.0.2.100/32"}, 0, "path: /var/lib/rancher/k3s/server/tls/server-ca.crt", "pod-manifests/novaedge-cpvip.yaml"},
		{[]string{"manifest", "pod", "--flavour", "rke2", "--vip-address", "192.0.2.100/32"}, 2, "", `--flavour "rke2": want kubeadm or k3s`},
		{[]string{"manifest", "pod", "--vrid", "0", "--vip-address", "192.0.2.100/32"}, 2, "", "invalid NOVAEDGE_CP_VIP_VRID"},
		{[]string{"manifest", "daemonset"}, 2, "", "usage: novaedge-cpvip manifest pod"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := dispatch(tt.args, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) {
			t.Errorf("%q: code %d, stdout %q, stderr %q", tt.args, code, stdout.String(), stderr.String())
		}
		if strings.Contains(stderr.String(), "s3cret") || tt.args[0] == "manifest" && strings.Contains(stdout.String(), "s3cret") {
			t.Errorf("%q printed a secret", tt.args)
		}
	}
}

// TestCheckConfigNamesAnUnusableCA: check-config fails on a CA file that is
// a directory or holds no certificate, naming it (it said "configuration is
// valid", and the daemon then verified nothing: issue 33).
func TestCheckConfigNamesAnUnusableCA(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{dir, "is a directory"},
		{empty, "holds no PEM certificate"},
	} {
		var stdout, stderr bytes.Buffer
		code := dispatch([]string{"check-config", "--vip-address", "192.0.2.100/32", "--ca-file", tc.path}, &stdout, &stderr)
		if code != exitConfig || !strings.Contains(stderr.String(), tc.path) || !strings.Contains(stderr.String(), tc.want) ||
			strings.Contains(stderr.String(), "configuration is valid") {
			t.Errorf("--ca-file %s: code %d, stderr %q; want %d naming the file and %q", tc.path, code, stderr.String(), exitConfig, tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"check-config", "--vip-address", "192.0.2.100/32", "--ca-file", filepath.Join(dir, "absent.crt")}, &stdout, &stderr); code != exitOK ||
		!strings.Contains(stderr.String(), "no cluster CA at") {
		t.Errorf("a CA not there yet (before bootstrap): code %d, stderr %q; want valid with a note", code, stderr.String())
	}
}
