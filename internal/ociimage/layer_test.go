package ociimage

import (
	"archive/tar"
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
