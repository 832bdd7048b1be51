package lab

import (
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/novaedge/cpvip/internal/ociimage"
)

// KubeVersion is the Kubernetes release the lab builds and kubeadm installs.
const KubeVersion = "v1.34.2"

// Image tags kubeadm v1.34 asks for (kubeadm config images list); etcd's is
// set in ClusterConfiguration to the etcd the lab builds.
const (
	PauseImage  = "registry.k8s.io/pause:3.10.1"
	EtcdTag     = "3.6.4-0"
	imagePrefix = "registry.k8s.io/"
)

// KubeBinaries are the kubeadm lab's programs, built from their upstream Go
// modules by test/realcp (static, version-stamped).
type KubeBinaries struct {
	RealBinaries
	Kubeadm, Kubelet, ControllerManager, Scheduler, Pause string
	Tree                                                  string // the systemd nodes' tree (SystemdTreeFromEnv)
	dir                                                   string
}

// KubeBinariesFromEnv finds the programs in the directory RealDirEnv names.
func KubeBinariesFromEnv() (KubeBinaries, error) {
	real, err := RealBinariesFromEnv()
	if err != nil {
		return KubeBinaries{}, err
	}
	dir := filepath.Dir(real.APIServer)
	b := KubeBinaries{RealBinaries: real, dir: dir, Kubeadm: filepath.Join(dir, "kubeadm"), Kubelet: filepath.Join(dir, "kubelet"),
		ControllerManager: filepath.Join(dir, "kube-controller-manager"), Scheduler: filepath.Join(dir, "kube-scheduler"), Pause: filepath.Join(dir, "pause")}
	for _, f := range []string{b.Kubeadm, b.Kubelet, b.ControllerManager, b.Scheduler, b.Pause} {
		if _, err := os.Stat(f); err != nil {
			return KubeBinaries{}, fmt.Errorf("kubeadm lab (make realcp): %w", err)
		}
	}
	if b.Tree, err = SystemdTreeFromEnv(); err != nil {
		return KubeBinaries{}, fmt.Errorf("kubeadm lab: %w", err)
	}
	return b, nil
}

// Images writes (once; kept beside the binaries) a docker-archive tarball
// with the control-plane images kubeadm asks for, each one layer holding
// its static binary: kube-apiserver, kube-controller-manager and
// kube-scheduler at KubeVersion, etcd at EtcdTag, and the pause image.
func (b KubeBinaries) Images() (string, error) {
	out := filepath.Join(b.dir, "kube-images.tar")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	refs := map[name.Reference]v1.Image{}
	for _, c := range []struct{ ref, bin, path string }{
		{"kube-apiserver:" + KubeVersion, b.APIServer, "usr/local/bin/kube-apiserver"},
		{"kube-controller-manager:" + KubeVersion, b.ControllerManager, "usr/local/bin/kube-controller-manager"},
		{"kube-scheduler:" + KubeVersion, b.Scheduler, "usr/local/bin/kube-scheduler"},
		{"etcd:" + EtcdTag, b.Etcd, "usr/local/bin/etcd"},
		{"pause:3.10.1", b.Pause, "pause"},
	} {
		img, err := binaryImage(c.bin, c.path)
		if err != nil {
			return "", fmt.Errorf("image %s: %w", c.ref, err)
		}
		tag, err := name.NewTag(imagePrefix + c.ref)
		if err != nil {
			return "", err
		}
		refs[tag] = img
	}
	tmp := out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return "", err
	}
	return out, os.Rename(tmp, out)
}

// binaryImage is an image of one layer holding bin at path (its entrypoint,
// /usr/local/bin on PATH).
func binaryImage(bin, path string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	layer, err := ociimage.FileLayer(path, data, []string{"tmp/"}, tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, err
	}
	return ociimage.Image(empty.Image, layer, runtime.GOARCH, func(c *v1.Config) {
		c.Entrypoint = []string{"/" + path}
		c.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	})
}
