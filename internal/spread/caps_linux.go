package spread

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DropBPF removes CAP_BPF from every thread of the process, for good
// (effective, permitted and inheritable sets; the kernel takes it from the
// ambient set with them): once the steering is attached, nothing needs it —
// the lease is written through the map's memory — and a flaw reached
// through the proxy's sockets then cannot load a program. It needs the
// capset system call (the spreading drop-in allows it) and a build without
// cgo, as shipped (syscall.AllThreadsSyscall).
func DropBPF() error {
	const capBPF = 39 // CAP_BPF, linux/capability.h
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading the capabilities: %w", err)
	}
	bit := uint32(1) << (capBPF % 32)
	d := &data[capBPF/32]
	d.Effective &^= bit
	d.Permitted &^= bit
	d.Inheritable &^= bit
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("dropping CAP_BPF: %w", errno)
	}
	return nil
}
