package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// nfpm is the packager `make package` runs (Makefile NFPM), the same pin.
const nfpm = "github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.44.0"

// BuildDeb packs binary as `make package` does — the repository's
// nfpm.yaml, unit, env file and maintainer scripts — at version into out,
// and returns the .deb's path. It works on a copy of what nfpm.yaml names,
// so nothing in the repository (dist/, bin/) is touched.
func BuildDeb(repo, binary, version, out string) (string, error) {
	stage, err := os.MkdirTemp("", "cpvip-deb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)
	// What nfpm.yaml names lies in these; the binary goes where `make
	// package` puts it.
	for _, dir := range []string{"nfpm.yaml", "systemd", "packaging"} {
		if err := run("cp", "-a", filepath.Join(repo, dir), stage); err != nil {
			return "", err
		}
	}
	if err := copyFile(binary, filepath.Join(stage, "bin/pkg/novaedge-cpvip")); err != nil {
		return "", err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "run", nfpm, "package", "--config", "nfpm.yaml", "--packager", "deb", "--target", out)
	cmd.Dir = stage
	cmd.Env = append(os.Environ(), "VERSION="+version, "ARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("nfpm: %w: %s", err, b)
	}
	deb := filepath.Join(out, fmt.Sprintf("novaedge-cpvip_%s_%s.deb", version, runtime.GOARCH))
	if _, err := os.Stat(deb); err != nil {
		return "", fmt.Errorf("nfpm wrote no %s: %w", filepath.Base(deb), err)
	}
	return deb, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	st, err := os.Stat(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, b, st.Mode().Perm())
}
