// Package reconcile keeps the VIP addresses on one interface as they should
// be: a step reads the actual addresses (only the VIPs we own), diffs them
// against the desired set, corrects the difference idempotently and counts
// what it changed. A Loop drives the step from kernel events and a periodic pass.
package reconcile
