// Command kube-vip is kube-vip v1.2.2 built from its Go module, as a lab peer
// for the migration tests (test/e2e/kubevip_test.go): the same main as
// kube-vip's own, with the version stamped.
//
// v1.2.2 and not v1.2.3: the module proxy this lab reaches refuses v1.2.3
// ("not available"); v1.2.2 is the newest it serves.
package main

import "github.com/kube-vip/kube-vip/cmd"

func main() {
	cmd.Release.Version = "v1.2.2"
	cmd.Execute()
}
