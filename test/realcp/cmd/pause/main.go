// Command pause is the pod sandbox's process in the lab's kubeadm cluster
// (registry.k8s.io/pause does the same in C): it sleeps, reaps the children
// it inherits as a namespace's init, and exits on SIGINT or SIGTERM; with -v
// it prints its version and exits (kubeadm upgrade's test Job runs
// "pause -v" and waits for it to complete). Test use only.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause v3.10.1 (novaedge-cpvip lab)")
		return
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
