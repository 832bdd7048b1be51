package ociimage

import (
	"archive/tar"
	"encoding/hex"
	"io"
	"slices"
	"testing"
)

func TestFileLayer(t *testing.T) {
	l, err := FileLayer("usr/local/bin/x", []byte("bin"), []string{"tmp/"})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "tmp/" && h.Mode != 0o1777 || h.Name == "usr/local/bin/x" && (h.Mode != 0o755 || h.Size != 3) || h.ModTime.Unix() != 0 {
			t.Errorf("%s: mode %o size %d time %v", h.Name, h.Mode, h.Size, h.ModTime)
		}
	}
	if want := []string{"usr/", "usr/local/", "usr/local/bin/", "tmp/", "usr/local/bin/x"}; !slices.Equal(names, want) {
		t.Errorf("entries %v, want %v", names, want)
	}
	d1, _ := l.Digest()
	l2, _ := FileLayer("usr/local/bin/x", []byte("bin"), []string{"tmp/"})
	if d2, _ := l2.Digest(); d1 != d2 {
		t.Errorf("the same file gave two layers: %s, %s", d1, d2)
	}
}

// TestFileCaps: the capability record is what setcap writes for
// cap_net_admin,cap_net_raw+ep (revision 2, effective), and it is in the
// layer as the xattr a runtime unpacks.
func TestFileCaps(t *testing.T) {
	const setcap = "0100000200300000000000000000000000000000" // getxattr security.capability after setcap
	if got := hex.EncodeToString([]byte(fileCaps(CapNetAdmin, CapNetRaw))); got != setcap {
		t.Fatalf("security.capability %s, want %s", got, setcap)
	}
	l, err := File{Name: "usr/local/bin/x", Data: []byte("bin"), Caps: []int{CapNetAdmin, CapNetRaw}}.Layer()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no file with capabilities: %v", err)
		}
		if h.Name == "usr/local/bin/x" {
			if got := hex.EncodeToString([]byte(h.PAXRecords[xattrCaps])); got != setcap {
				t.Fatalf("layer xattr %s, want %s", got, setcap)
			}
			return
		}
	}
}
