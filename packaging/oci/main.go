// Command oci writes an OCI image layout for novaedge-cpvip from the static
// binary, with no container engine: one layer holding /usr/bin/novaedge-cpvip,
// entrypoint "novaedge-cpvip run". -verify reads a layout back and checks it.
//
//	go run ./packaging/oci -bin bin/novaedge-cpvip -out dist/oci -name ghcr.io/novaedge/cpvip -tag v0.1.0
//	go run ./packaging/oci -verify dist/oci
package main

import (
	"archive/tar"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/novaedge/cpvip/internal/ociimage"
)

const binPath = "usr/bin/novaedge-cpvip"

func main() {
	bin := flag.String("bin", "bin/novaedge-cpvip", "the static binary")
	out := flag.String("out", "dist/oci", "directory of the OCI image layout to write")
	tag := flag.String("tag", "dev", "image version (org.opencontainers.image.ref.name)")
	repo := flag.String("name", "ghcr.io/novaedge/cpvip", "image repository; NAME:TAG is the image's full name (io.containerd.image.name), the one `novaedge-cpvip manifest pod` names")
	verify := flag.String("verify", "", "check the OCI layout in this directory instead of writing one")
	flag.Parse()
	var err error
	if *verify != "" {
		err = check(*verify)
	} else {
		err = build(*bin, *out, *repo, *tag)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "oci:", err)
		os.Exit(1)
	}
}

func build(bin, out, repo, tag string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	img, err := image(data, tag)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	// containerd's import (ctr images import) names the image by
	// io.containerd.image.name; OCI tools by the ref.name tag.
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag, "io.containerd.image.name": repo + ":" + tag})); err != nil {
		return err
	}
	d, _ := img.Digest()
	fmt.Printf("wrote OCI image layout %s (%s:%s, %s)\n", out, repo, tag, d)
	return nil
}

// nonRoot is the image's user: nobody:nogroup.
const nonRoot = "65534:65534"

// image builds the image: OCI media types, one layer, entrypoint and labels.
func image(bin []byte, tag string) (v1.Image, error) {
	// Non-root, with the two capabilities it needs as file capabilities: a
	// runtime gives a non-root process no ambient capabilities, so the
	// binary carries them (within the pod's bounding set).
	layer, err := ociimage.File{Name: binPath, Data: bin, Caps: []int{ociimage.CapNetAdmin, ociimage.CapNetRaw}}.Layer(
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	return ociimage.Image(base, layer, func(c *v1.Config) {
		c.Entrypoint = []string{"/" + binPath}
		c.Cmd = []string{"run"}
		c.User = nonRoot
		c.Labels = map[string]string{
			"org.opencontainers.image.title":    "novaedge-cpvip",
			"org.opencontainers.image.version":  tag,
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.source":   "https://github.com/novaedge/cpvip",
		}
	})
}

// check reads a layout back: one image, valid digests, the entrypoint, and
// the binary in its layer.
func check(dir string) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		return err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if len(m.Manifests) != 1 {
		return fmt.Errorf("%d manifests, want 1", len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return err
	}
	if err := validate.Image(img); err != nil {
		return fmt.Errorf("invalid image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/"+binPath {
		return fmt.Errorf("entrypoint %v", cf.Config.Entrypoint)
	}
	if cf.Config.User != nonRoot {
		return fmt.Errorf("user %q, want %s", cf.Config.User, nonRoot)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		return fmt.Errorf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return errors.New("the layer lacks " + binPath)
		}
		if err != nil {
			return err
		}
		if h.Name == binPath && h.Mode&0o111 != 0 && h.Size > 0 {
			if h.PAXRecords["SCHILY.xattr.security.capability"] == "" {
				return errors.New(binPath + " carries no file capabilities: a non-root user could not bind the VIP")
			}
			fmt.Printf("OCI layout %s ok: %s, entrypoint %v, user %s, %s (%d bytes, file capabilities)\n", dir, m.Manifests[0].Digest, cf.Config.Entrypoint, cf.Config.User, binPath, h.Size)
			return nil
		}
	}
}
