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
//   - no connection on etcd's ports to another host shows a lost segment
//     (a retransmission timeout or an unacknowledged retransmission now,
//     segments retransmitted or received out of order since a mark within
//     5 s — the checker marks the counters as a check begins, every 3 s
//     at most — or loss seen by a look within 5 s), or the losing one has
//     had no acknowledgement for a second (cut off, not lossy): the stall
//     is etcd's;
//   - etcd leaves what it was sent unread (a receive queue of its not
//     drained over 100 ms, or gone meanwhile): its process does not run;
//     the stall is etcd's;
//   - else etcd runs and reads, and its connections lose segments: the
//     stall is the network's.
//
// The kernel filters the table by etcd's ports (bytecode, as ss(8) does),
// so a busy node's other sockets cost nothing to parse; it still walks its
// whole TCP hash table (0.5-1.5 ms here), so the table is dumped only at a
// stall and when a mark needs it: a mark (on the checker's own wake-up,
// every 3 s at most) asks for the connections the last dump found one by
// one (a hash lookup each), and dumps when that dump is 30 s old or one
// of them is gone (etcd redialled). Never on a timer of its own, over one
// netlink socket kept open and by raw system calls.
package etcdwatch
