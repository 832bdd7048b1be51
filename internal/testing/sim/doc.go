// Package sim is a deterministic simulation of a group of novaedge-cpvip
// nodes in L2 mode: the real decision code of each node — the health
// checker's rule from results to transitions (health.Judge), the VRRP
// instance's Node (its Core with the health vote, Fault and Resume paths,
// the carrying out of its effects) over transports of the segment, the
// address conflict guard (internal/acd's Guard and
// Known), the reconcile step and its one bind decision (internal/reconcile,
// internal/bind) over an in-memory address table, and reload
// (config.Reload) — driven by one virtual clock on a virtual segment that
// carries advertisements, ARP probes, answers and announcements with loss,
// delay, duplication and partitions.
//
// A run is a schedule of faults drawn from a seed: apiservers that turn
// slow, hung, refused or draining; our daemon killed (its addresses kept)
// and restarted, or stopped, or frozen (SIGSTOP: a VM paused; what it
// receives meanwhile waits for it); carrier flaps of any length; the interface
// deleted and made again; reloads, valid and not; a stranger answering for
// the VIP; malformed frames; a conflict-check wire that fails; a
// keepalived-like member. The same seed gives the same run, event for
// event. Invariants are checked after every event (invariants.go); a
// failing schedule is shrunk to the faults it needs and printed with its
// trace.
//
// What the simulation leaves to the namespace labs: the kernel, sockets,
// netlink and real peers (test/e2e). What the labs leave to it: the
// orderings and timings of faults that a lab reaches rarely or never.
package sim
