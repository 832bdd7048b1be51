// Package reconciletest provides an in-memory interface address list for
// tests of code that reconciles addresses.
package reconciletest

import (
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Addrs is an interface's addresses in memory. It records every mutation and
// can fail Add or List on demand. Safe for concurrent use.
type Addrs struct {
	mu        sync.Mutex
	addrs     []netip.Prefix
	mutations []string
	failAdd   error
	failList  error
}

// New returns an address list holding addrs.
func New(addrs ...netip.Prefix) *Addrs { return &Addrs{addrs: addrs} }

// List implements reconcile.Addresses.
func (a *Addrs) List() ([]netip.Prefix, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.addrs), a.failList
}

// Has says whether an address of vip is on the interface.
func (a *Addrs) Has(vip netip.Addr) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.ContainsFunc(a.addrs, func(p netip.Prefix) bool { return p.Addr() == vip })
}

// Add implements reconcile.Addresses; a lifetime is recorded in the
// mutation ("add P for 3s"), not kept (Lifetimes does).
func (a *Addrs) Add(p netip.Prefix, lifetime time.Duration) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := "add " + p.String()
	if lifetime > 0 {
		m += " for " + lifetime.String()
	}
	a.mutations = append(a.mutations, m)
	if a.failAdd != nil {
		return a.failAdd
	}
	if !slices.Contains(a.addrs, p) {
		a.addrs = append(a.addrs, p)
	}
	return nil
}

// Del implements reconcile.Addresses.
func (a *Addrs) Del(p netip.Prefix) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mutations = append(a.mutations, "del "+p.String())
	a.addrs = slices.DeleteFunc(a.addrs, func(q netip.Prefix) bool { return q == p })
	return nil
}

// Take returns the mutations since the last call.
func (a *Addrs) Take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.mutations
	a.mutations = nil
	return m
}

// Fail makes Add and List fail with these errors (nil: succeed).
func (a *Addrs) Fail(add, list error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failAdd, a.failList = add, list
}
