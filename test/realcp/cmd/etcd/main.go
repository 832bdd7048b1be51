// Command etcd is the upstream etcd server, built from the
// go.etcd.io/etcd/server/v3 module for the lab's real control plane. Test use only.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
