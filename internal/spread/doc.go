// Package spread lets the VIP's holder spread new connections to
// VIP:API_PORT over every healthy apiserver of the control plane, its own
// included (L2 mode; docs/architecture.md#spreading-api-connections).
//
// One concern a file:
//   - Steer (steer_linux.go): an sk_lookup program attached to the network
//     namespace hands each new connection to VIP:API_PORT to our listener,
//     before the kernel looks for the apiserver's wildcard socket. It lives
//     as long as our process: stopped or killed, the kernel detaches it and
//     the local apiserver answers the VIP again, as without spreading. No
//     NAT, no conntrack, no netfilter rule: nothing of kube-proxy's or a
//     CNI's is touched, nothing is left behind.
//   - Pool (pool.go): the backends, their health, the connections each
//     carries, and which one a new connection goes to.
//   - Proxy (proxy.go): accepts, dials the picked backend, then copies both
//     ways (splice(2) in the kernel) with no time-out of ours.
//   - greeting (greet.go): until the backend's first answer, what the
//     client sent is kept, so that a backend that refuses, does not answer
//     the dial, resets before its first byte or does not answer the
//     client's first bytes in time is replaced by the next one with those
//     bytes sent again: the client never sees it.
//   - Spreader (spreader.go): the whole, for cmd: the backends' health
//     checks (internal/health, as our own node's apiserver is checked), the
//     local one's from the node's own check, a Proxy per listener, Steer.
package spread
