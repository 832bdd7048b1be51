package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/staticpod"
)

// imageRepo is the image repository this build's image is pushed to; with
// version it names the image `make image` builds (-X main.imageRepo=...).
var imageRepo = "ghcr.io/novaedge/cpvip"

// manifest prints the static pod for the configuration given by the same
// flags, variables and env file as run.
func manifest(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "pod" {
		fmt.Fprintln(stderr, "usage: novaedge-cpvip manifest pod [--flavour kubeadm|k3s] [--image REF] [--secrets-file PATH] [config flags]")
		return exitConfig
	}
	var flavour, image, secrets string
	fl, code := parseFlags("manifest pod", args[1:], stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&flavour, "flavour", "kubeadm", "kubeadm or k3s: where the pod goes and where the cluster CA is")
		fs.StringVar(&image, "image", imageRepo+":"+version, "the `image` to run, this build's by default as make image names it; a kubelet must be able to pull it")
		fs.StringVar(&secrets, "secrets-file", staticpod.DefaultSecretsFile, "host file the pod reads secret variables from (never put in its env)")
	})
	if fl == nil {
		return code
	}
	fv, ok := staticpod.Flavours[flavour]
	if !ok {
		fmt.Fprintf(stderr, "novaedge-cpvip manifest pod: --flavour %q: want kubeadm or k3s\n", flavour)
		return exitConfig
	}
	vars, err := config.Given(fl)
	if err != nil {
		fmt.Fprintf(stderr, "novaedge-cpvip: %v\n", err)
		return exitConfig
	}
	pod, err := staticpod.Render(staticpod.Options{Flavour: fv, Image: image, Vars: vars, SecretsFile: secrets})
	if err != nil {
		fmt.Fprintf(stderr, "novaedge-cpvip manifest pod: %v\n", err)
		return exitConfig
	}
	_, _ = stdout.Write(pod.YAML)
	fmt.Fprintf(stderr, "static pod for %s: put it in %s on every control-plane node\n", fv.Name, pod.Path)
	if len(pod.Secrets) > 0 {
		fmt.Fprintf(stderr, "secrets: %s left out of the pod's env (readable through the API): write them to %s on every node (KEY=VALUE, mode 0600)\n",
			strings.Join(pod.Secrets, ", "), secrets)
	}
	return exitOK
}
