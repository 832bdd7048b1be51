package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBuildAndVerify(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "novaedge-cpvip")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "oci")
	if err := build(bin, out, "ghcr.io/novaedge/cpvip", "test"); err != nil {
		t.Fatal(err)
	}
	if err := check(out); err != nil {
		t.Fatal(err)
	}
	if err := check(dir); err == nil {
		t.Error("a directory without a layout passed the check")
	}
}
