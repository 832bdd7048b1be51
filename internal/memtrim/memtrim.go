// Package memtrim drops the executable's read-only pages that start-up
// touched once from the process's resident set.
package memtrim

import (
	"bufio"
	"fmt"
	"io"
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
// for the life of the process. Writable mappings are never touched, nor a
// read-only one with a page of its own (written before it was made
// read-only: the dynamic loader's relocations, RELRO, in a cgo or PIE
// build), whose content the file does not have. It returns the bytes advised.
func Executable() (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	spans, err := trimmable(f, exe)
	f.Close()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, s := range spans {
		// By address: these are not Go memory, so no slice may view them.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, s.start, s.end-s.start, unix.MADV_DONTNEED); errno != 0 {
			return total, fmt.Errorf("madvise %x-%x: %w", s.start, s.end, errno)
		}
		total += int(s.end - s.start)
	}
	return total, nil
}

// span is an address range [start, end).
type span struct{ start, end uintptr }

// trimmable reads /proc/PID/smaps and returns the read-only private
// mappings of path that hold no anonymous (copied-on-write) page.
func trimmable(r io.Reader, path string) ([]span, error) {
	var out []span
	var cur span
	candidate, clean := false, false
	flush := func() {
		if candidate && clean {
			out = append(out, cur)
		}
		candidate, clean = false, false
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Anonymous:"); ok {
			clean = strings.TrimSpace(v) == "0 kB"
			continue
		}
		if !isHeader(line) {
			continue
		}
		flush()
		cur.start, cur.end, candidate = readOnlyMapping(line, path)
	}
	flush()
	return out, sc.Err()
}

// isHeader reports whether an smaps line starts a mapping ("lo-hi perms ..."),
// not one of its "Key: value" lines.
func isHeader(line string) bool {
	first, _, _ := strings.Cut(line, " ")
	return strings.Contains(first, "-") && !strings.HasSuffix(first, ":")
}

// readOnlyMapping parses one mapping line of /proc/self/maps or smaps and
// reports a read-only (r-xp or r--p) private mapping of path.
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
