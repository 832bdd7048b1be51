// Package ociimage builds image layers from files without a container
// engine: the shipped image (packaging/oci) and the test lab's control-plane
// images use it.
package ociimage

import (
	"archive/tar"
	"bytes"
	"io"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// FileLayer is a layer holding one executable file at name (relative, like
// usr/bin/x), its parent directories, and extra empty directories (a
// trailing slash each), every time stamp the epoch so that the same file
// gives the same layer. A directory named tmp/ gets mode 1777.
func FileLayer(name string, data []byte, dirs []string, opts ...tarball.LayerOption) (v1.Layer, error) {
	return File{Name: name, Data: data, Dirs: dirs}.Layer(opts...)
}

// File is one executable for a layer: its path (relative, like usr/bin/x),
// contents, extra empty directories, and capabilities it carries (file
// capabilities: see fileCaps), if any.
type File struct {
	Name string
	Data []byte
	Dirs []string
	Caps []int
}

// Layer builds the layer of f, as FileLayer does.
func (f File) Layer(opts ...tarball.LayerOption) (v1.Layer, error) {
	name, data, dirs := f.Name, f.Data, f.Dirs
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		dirs = append([]string{d + "/"}, dirs...)
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		mode := int64(0o755)
		if strings.TrimSuffix(d, "/") == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: epoch}
	if len(f.Caps) > 0 {
		hdr.PAXRecords, hdr.Format = map[string]string{xattrCaps: fileCaps(f.Caps...)}, tar.FormatPAX
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, opts...)
}

// Image appends layer to base and sets its configuration: linux/arch (a
// GOARCH name: amd64, arm64), then whatever edit changes (entrypoint,
// environment, labels).
func Image(base v1.Image, layer v1.Layer, arch string, edit func(*v1.Config)) (v1.Image, error) {
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = arch, "linux"
	edit(&cf.Config)
	return mutate.ConfigFile(img, cf)
}
