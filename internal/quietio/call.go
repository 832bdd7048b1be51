package quietio

import "golang.org/x/sys/unix"

// call makes one non-blocking system call, again while it is interrupted;
// ready is false when it would block (EAGAIN), for a RawConn callback to
// return false and wait. Pointers among the arguments must point into
// memory that a live Go pointer also holds (a struct or slice kept in the
// caller's value): call does not keep them alive by itself.
//
//go:nosplit
func call(trap, a1, a2, a3 uintptr) (n int, errno unix.Errno, ready bool) {
	for {
		r, _, e := unix.RawSyscall(trap, a1, a2, a3)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, 0, false
		}
		return int(r), e, true
	}
}
