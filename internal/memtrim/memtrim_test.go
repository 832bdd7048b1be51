package memtrim

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestReadOnlyMapping(t *testing.T) {
	const exe = "/usr/bin/novaedge-cpvip"
	for _, tt := range []struct {
		line       string
		ok         bool
		start, end uintptr
	}{
		{"00400000-00d7e000 r-xp 00000000 08:01 1234 /usr/bin/novaedge-cpvip", true, 0x400000, 0xd7e000},
		{"00d7e000-018fd000 r--p 0097e000 08:01 1234 /usr/bin/novaedge-cpvip", true, 0xd7e000, 0x18fd000},
		{"018fd000-01985000 rw-p 014fd000 08:01 1234 /usr/bin/novaedge-cpvip", false, 0, 0}, // writable: never
		{"7fc544e16000-7fc544f6c000 r-xp 00026000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6", false, 0, 0},
		{"c000000000-c000400000 rw-p 00000000 00:00 0", false, 0, 0},
		{"00400000-00300000 r-xp 00000000 08:01 1234 /usr/bin/novaedge-cpvip", false, 0, 0},
		{"garbage", false, 0, 0},
	} {
		start, end, ok := readOnlyMapping(tt.line, exe)
		if ok != tt.ok || start != tt.start || end != tt.end {
			t.Errorf("%q: %x-%x %v, want %x-%x %v", tt.line, start, end, ok, tt.start, tt.end, tt.ok)
		}
	}
}

// smaps is /proc/PID/smaps of a cgo build (shortened): code, read-only data,
// the RELRO page the dynamic loader wrote (now r--p, one anonymous page) and
// the writable data.
const smaps = `00400000-00d7e000 r-xp 00000000 08:01 1234 /usr/bin/novaedge-cpvip
Size:               9720 kB
Rss:                4096 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw sd
00d7e000-018fd000 r--p 0097e000 08:01 1234 /usr/bin/novaedge-cpvip
Size:              11772 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
01928000-01929000 r--p 01527000 08:01 1234 /usr/bin/novaedge-cpvip
Size:                  4 kB
Anonymous:             4 kB
VmFlags: rd mr mw me ac sd
01929000-019b1000 rw-p 01528000 08:01 1234 /usr/bin/novaedge-cpvip
Size:                544 kB
Anonymous:           100 kB
VmFlags: rd wr mr mw me ac sd
7fc544e16000-7fc544f6c000 r-xp 00026000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
Size:               1368 kB
Anonymous:             0 kB
`

func TestTrimmable(t *testing.T) {
	got, err := trimmable(strings.NewReader(smaps), "/usr/bin/novaedge-cpvip")
	want := []span{{0x400000, 0xd7e000}, {0xd7e000, 0x18fd000}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("trimmable = %x, %v; want %x (never the loader's RELRO page, never writable)", got, err, want)
	}
	// A mapping whose Anonymous line is missing is not known clean: kept.
	noAnon := "00400000-00d7e000 r-xp 00000000 08:01 1234 /x\nSize: 4 kB\n"
	if got, _ := trimmable(strings.NewReader(noAnon), "/x"); len(got) != 0 {
		t.Errorf("no Anonymous line: trimmable = %x, want none", got)
	}
}

// TestExecutable runs the trim on the test binary itself: it must find its
// code and read-only data; the test process going on afterwards (this test's
// end, the rest of the package) is the proof it still runs.
func TestExecutable(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc")
	}
	n, err := Executable()
	if err != nil || n == 0 {
		t.Fatalf("trimmed %d bytes, %v", n, err)
	}
}

func FuzzTrimmable(f *testing.F) {
	f.Add(smaps, "/usr/bin/novaedge-cpvip")
	f.Fuzz(func(t *testing.T, text, path string) {
		spans, _ := trimmable(strings.NewReader(text), path)
		for _, s := range spans {
			if s.end <= s.start {
				t.Fatalf("empty or inverted range %x-%x accepted", s.start, s.end)
			}
		}
	})
}

func FuzzReadOnlyMapping(f *testing.F) {
	f.Add("00400000-00d7e000 r-xp 00000000 08:01 1234 /x", "/x")
	f.Fuzz(func(t *testing.T, line, path string) {
		start, end, ok := readOnlyMapping(line, path)
		if ok && end <= start {
			t.Fatalf("%q: empty or inverted range %x-%x accepted", line, start, end)
		}
	})
}
