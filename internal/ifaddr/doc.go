// Package ifaddr binds and removes addresses on one interface through netlink
// and watches the kernel for address and link changes on it.
package ifaddr
