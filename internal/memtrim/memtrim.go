// Package memtrim drops the executable's read-only pages that start-up
// touched once from the process's resident set.
package memtrim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Executable unmaps, from this process's page tables only, the pages of
// the executable's read-only mappings (code and read-only data). They stay
// in the page cache; the ones the daemon uses again fault back in at once
// (a minor fault). Go runs every linked package's initialisation at start,
// including GoBGP's, gRPC's and protobuf's in L2 mode, which touches nearly
// the whole binary once; without this, the resident set counts those pages
// for the life of the process. Writable mappings are never touched. It
// returns the bytes advised.
func Executable() (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	total := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		start, end, ok := readOnlyMapping(sc.Text(), exe)
		if !ok {
			continue
		}
		// By address: these are not Go memory, so no slice may view them.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_DONTNEED); errno != 0 {
			return total, fmt.Errorf("madvise %x-%x: %w", start, end, errno)
		}
		total += int(end - start)
	}
	return total, sc.Err()
}

// readOnlyMapping parses one line of /proc/self/maps and reports a
// read-only (r-xp or r--p) private mapping of path.
func readOnlyMapping(line, path string) (start, end uintptr, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[5] != path || (fields[1] != "r-xp" && fields[1] != "r--p") {
		return 0, 0, false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(lo, 16, 64)
	e, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}
