// Command kubeadm is the upstream kubeadm, built from the k8s.io/kubernetes
// module for the lab's kubeadm cluster. Test use only.
package main

import (
	"k8s.io/kubernetes/cmd/kubeadm/app"
	utilerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
)

func main() {
	utilerrors.HandleError(app.Run())
}
