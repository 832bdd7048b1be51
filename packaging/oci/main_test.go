package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestBuildAndVerify(t *testing.T) {
	dir := t.TempDir()
	bins := ""
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, "novaedge-cpvip-"+arch)
		if err := os.WriteFile(bin, []byte("#!/bin/true "+arch+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if bins != "" {
			bins += ","
		}
		bins += arch + "=" + bin
	}
	out := filepath.Join(dir, "oci")
	if err := build(bins, out, "ghcr.io/novaedge/cpvip", "test"); err != nil {
		t.Fatal(err)
	}
	if err := check(out); err != nil {
		t.Fatal(err)
	}
	if err := check(dir); err == nil {
		t.Error("a directory without a layout passed the check")
	}
	// Reproducible: the same binaries give the same bytes.
	again := filepath.Join(dir, "oci2")
	if err := build(bins, again, "ghcr.io/novaedge/cpvip", "test"); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(out, "index.json"))
	b, _ := os.ReadFile(filepath.Join(again, "index.json"))
	if !bytes.Equal(a, b) {
		t.Errorf("two builds differ:\n%s\n%s", a, b)
	}
}
