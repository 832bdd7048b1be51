// Package kubevip converts a kube-vip (>= 0.6) static pod or DaemonSet
// manifest into a novaedge-cpvip env file: it maps what has an equivalent,
// and says what it dropped and why (service load-balancing, leases: we need
// neither). The result is validated like any configuration.
package kubevip
