package spread

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DropBPF removes CAP_BPF from every thread of the process, for good
// (effective, permitted, inheritable and ambient sets): once the steering is
// attached, nothing needs it — the lease's map is written through the
// descriptor already open — and a flaw reached through the proxy's sockets
// then cannot load a program. The bpf system call stays allowed (the
// lease's updates use it). It needs a build without cgo, as shipped
// (syscall.AllThreadsSyscall).
func DropBPF() error {
	const capBPF = 39 // CAP_BPF, linux/capability.h
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_LOWER, capBPF); errno != 0 {
		return fmt.Errorf("lowering the ambient CAP_BPF: %w", errno)
	}
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
