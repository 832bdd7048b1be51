package ociimage

import (
	"archive/tar"
	"encoding/hex"
	"io"
	"slices"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// headers reads the tar headers of a layer, in order.
func headers(t *testing.T, l v1.Layer) []*tar.Header {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var out []*tar.Header
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
}

func TestFileLayer(t *testing.T) {
	l, err := FileLayer("usr/local/bin/x", []byte("bin"), []string{"tmp/"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range headers(t, l) {
		names = append(names, h.Name)
		if h.Name == "tmp/" && h.Mode != 0o1777 || h.Name == "usr/local/bin/x" && (h.Mode != 0o755 || h.Size != 3) || h.ModTime.Unix() != 0 {
			t.Errorf("%s: mode %o size %d time %v", h.Name, h.Mode, h.Size, h.ModTime)
		}
		if len(h.PAXRecords) > 0 {
			t.Errorf("%s: PAX records %v without capabilities asked for", h.Name, h.PAXRecords)
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
	hs := headers(t, l)
	i := slices.IndexFunc(hs, func(h *tar.Header) bool { return h.Name == "usr/local/bin/x" })
	if i < 0 {
		t.Fatal("no file in the layer")
	}
	if got := hex.EncodeToString([]byte(hs[i].PAXRecords[xattrCaps])); got != setcap {
		t.Fatalf("layer xattr %s, want %s", got, setcap)
	}
}
