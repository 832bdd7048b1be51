// Package spread lets the VIP's holder spread new connections to
// VIP:API_PORT over every healthy apiserver of the control plane, its own
// included (L2 mode; docs/architecture.md#spreading-api-connections).
//
// Three parts, one concern each:
//   - Steer (steer_linux.go): an sk_lookup program attached to the network
//     namespace hands each new connection to VIP:API_PORT to our listener,
//     before the kernel looks for the apiserver's wildcard socket. It lives
//     as long as our process: stopped or killed, the kernel detaches it and
//     the local apiserver answers the VIP again, as without spreading. No
//     NAT, no conntrack, no netfilter rule: nothing of kube-proxy's or a
//     CNI's is touched, nothing is left behind.
//   - Pool (pool.go): the backends, their health (each checked as our own
//     node's apiserver is: internal/health), the connections each carries,
//     and which one a new connection goes to.
//   - Proxy (proxy.go): accepts, dials the picked backend (a refused or
//     unanswered dial, or a reset before the backend's first byte, goes to the
//     next one with the client's first bytes again: the client never sees it), then
//     copies both ways (splice(2) in the kernel) with no timeout of ours.
package spread
