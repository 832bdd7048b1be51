// Command kube-apiserver is the upstream kube-apiserver, built from the
// k8s.io/kubernetes module for the lab's real control plane. Test use only.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
