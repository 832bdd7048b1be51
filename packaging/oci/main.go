// Command oci writes an OCI image layout for novaedge-cpvip from the static
// binaries, with no container engine: an image index with one image per
// platform, each one layer holding /usr/bin/novaedge-cpvip, entrypoint
// "novaedge-cpvip run". -verify reads a layout back and checks it.
//
//	go run ./packaging/oci -bin amd64=bin/linux-amd64/novaedge-cpvip,arm64=bin/linux-arm64/novaedge-cpvip -out dist/oci -name ghcr.io/novaedge/cpvip -tag v0.1.0
//	go run ./packaging/oci -verify dist/oci
//
// A -bin without ARCH= is amd64. Every timestamp in it is fixed (layers: the
// Unix epoch; no created time), so two builds of the same binaries are
// byte-identical.
package main

import (
	"archive/tar"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/novaedge/cpvip/internal/ociimage"
	"github.com/novaedge/cpvip/internal/staticpod"
)

const binPath = "usr/bin/novaedge-cpvip"

func main() {
	bin := flag.String("bin", "bin/novaedge-cpvip", "the static binaries: ARCH=PATH,... (a PATH alone is amd64)")
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

func build(bins, out, repo, tag string) error {
	idx, err := index(bins, tag)
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
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag, "io.containerd.image.name": repo + ":" + tag})); err != nil {
		return err
	}
	d, _ := idx.Digest()
	fmt.Printf("wrote OCI image layout %s (%s:%s, index %s)\n", out, repo, tag, d)
	return nil
}

// index builds the image index: one image per ARCH=PATH of bins.
func index(bins, tag string) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, b := range strings.Split(bins, ",") {
		arch, path, ok := strings.Cut(b, "=")
		if !ok {
			arch, path = "amd64", b
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		img, err := image(data, arch, tag)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

// nonRoot is the image's user: the static pod's own id (staticpod.UID),
// not nobody's.
var nonRoot = fmt.Sprintf("%d:%d", staticpod.UID, staticpod.UID)

// image builds the image: OCI media types, one layer, entrypoint and labels.
func image(bin []byte, arch, tag string) (v1.Image, error) {
	// Non-root, with the two capabilities it needs as file capabilities: a
	// runtime gives a non-root process no ambient capabilities, so the
	// binary carries them (within the pod's bounding set).
	layer, err := ociimage.File{Name: binPath, Data: bin, Caps: []int{ociimage.CapNetAdmin, ociimage.CapNetRaw}}.Layer(
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	return ociimage.Image(base, layer, arch, func(c *v1.Config) {
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

// check reads a layout back: one image index with one image per platform,
// valid digests, the entrypoint, the user, and the binary with its file
// capabilities in each layer.
func check(dir string) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		return err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return err
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex {
		return fmt.Errorf("want one image index in the layout, found %d entries", len(m.Manifests))
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return err
	}
	if err := validate.Index(idx); err != nil {
		return fmt.Errorf("invalid image index: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			return fmt.Errorf("image %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		if err := checkImage(img, d.Platform.Architecture); err != nil {
			return fmt.Errorf("linux/%s: %w", d.Platform.Architecture, err)
		}
		fmt.Printf("OCI layout %s ok: linux/%s %s\n", dir, d.Platform.Architecture, d.Digest)
	}
	return nil
}

// checkImage checks one platform's image: its configuration and its layer.
func checkImage(img v1.Image, arch string) error {
	if err := validate.Image(img); err != nil {
		return fmt.Errorf("invalid image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if cf.Architecture != arch || cf.OS != "linux" {
		return fmt.Errorf("configuration says %s/%s", cf.OS, cf.Architecture)
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
			return nil
		}
	}
}
