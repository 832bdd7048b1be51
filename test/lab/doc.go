// Package lab builds network namespace labs for end-to-end tests and the
// demo: a switch namespace with a bridge, hosts attached to it by veth pairs,
// a stand-in kube-apiserver in a host, and the real novaedge-cpvip binary
// started inside a host. Names are unique per lab; Close removes everything
// and ends only the processes the lab started, by PID.
//
// Addresses come from the documentation ranges only (192.0.2.0/24,
// 2001:db8::/32); nothing touches the host's own interfaces or routes.
package lab
