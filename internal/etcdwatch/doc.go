// Package etcdwatch tells a stall of this host's etcd that the network
// causes from one of etcd itself, for the health check's hung verdict.
//
// An apiserver whose check stalls while it answers /livez/ping at once
// waits on etcd. When etcd is stopped, frozen or gone, another node's
// apiserver serves and the VIP should move fast. When etcd's connections
// lose segments (a lossy segment: raft messages wait out retransmission
// timeouts), every apiserver stalls now and then and a move only resets
// clients. The kernel's TCP socket table (sock_diag) tells the two apart
// without credentials or an etcd client:
//   - no socket listens on etcd's ports: etcd is not running here (or runs
//     elsewhere); the stall is etcd's;
//   - etcd's connections show no lost segment (retransmissions in flight,
//     segments lost, retransmitted or received out of order since the
//     previous look): the stall is etcd's;
//   - etcd leaves what it was sent unread (a receive queue not drained
//     over a short gap): its process does not run; the stall is etcd's;
//   - else etcd runs and reads, and its connections lose segments: the
//     stall is the network's.
//
// It reads only sockets on etcd's ports in this network namespace, and
// only when asked (a stall), never on a timer.
package etcdwatch
