// Package quietio does the idle daemon's periodic socket I/O (BFD's
// datagrams, the health check's connection, VRRP's adverts in and out) by raw system
// calls inside the netpoller's RawConn callbacks. The runtime still parks a
// reader until its socket is ready and still honours deadlines, but the
// calls do not enter the scheduler: each syscall.Syscall (what package net
// uses) wakes Go's sysmon thread from its sleep, and sysmon then polls
// every 20 µs while the goroutine works. For a daemon that wakes a few
// times a second, those were most of its wake-ups. A read or write on a
// non-blocking socket never blocks, which is what RawSyscall requires.
package quietio
