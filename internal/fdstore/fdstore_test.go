package fdstore

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// recv reads one message from the service manager's side of the socket:
// its text and the descriptors it carried.
func recv(t *testing.T, fd int) (string, []int) {
	t.Helper()
	buf, oob := make([]byte, 512), make([]byte, unix.CmsgSpace(16*4))
	n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		rights, err := unix.ParseUnixRights(&m)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, rights...)
	}
	return string(buf[:n]), fds
}

// Keep sends FDSTORE=1 with the name and copies of the descriptors, Forget
// FDSTOREREMOVE=1 with the name, to $NOTIFY_SOCKET; a name systemd would
// refuse is refused here.
func TestKeepAndForget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	manager, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(manager)
	if err := unix.Bind(manager, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOTIFY_SOCKET", path)
	s, err := FromEnv()
	if err != nil || s == nil {
		t.Fatalf("FromEnv: %v %v", s, err)
	}
	defer s.Close()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if err := s.Keep("spread.a-1.u", false, p[0], p[1]); err != nil {
		t.Fatal(err)
	}
	msg, fds := recv(t, manager)
	if msg != "FDSTORE=1\nFDNAME=spread.a-1.u\nFDPOLL=0" || len(fds) != 2 {
		t.Fatalf("got %q with %d descriptors", msg, len(fds))
	}
	// A copy: what is written on ours reaches the manager's.
	unix.Write(p[1], []byte("x"))
	b := make([]byte, 1)
	if n, err := unix.Read(fds[0], b); n != 1 || err != nil || b[0] != 'x' {
		t.Errorf("the stored read end read %q %v", b[:n], err)
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	if err := s.Forget("spread.a-1.u"); err != nil {
		t.Fatal(err)
	}
	if msg, fds := recv(t, manager); msg != "FDSTOREREMOVE=1\nFDNAME=spread.a-1.u" || len(fds) != 0 {
		t.Fatalf("got %q with %d descriptors", msg, len(fds))
	}
	for _, bad := range []string{"", "a:b", "a b", "é", string(make([]byte, 256))} {
		if err := s.Keep(bad, true, p[0]); err == nil {
			t.Errorf("Keep(%q) accepted", bad)
		}
		if err := s.Forget(bad); err == nil {
			t.Errorf("Forget(%q) accepted", bad)
		}
	}
}

// Without $NOTIFY_SOCKET there is no store.
func TestNoStoreOutsideSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if s, err := FromEnv(); s != nil || err != nil {
		t.Errorf("FromEnv without NOTIFY_SOCKET: %v %v", s, err)
	}
}

// FuzzValidName: a valid name is printable ASCII without ':' and at most
// 255 bytes, as systemd's fdname_is_valid.
func FuzzValidName(f *testing.F) {
	f.Add("spread.a-1.c")
	f.Add("a:b")
	f.Fuzz(func(t *testing.T, name string) {
		if !ValidName(name) {
			return
		}
		if len(name) == 0 || len(name) > 255 {
			t.Errorf("%q: length %d", name, len(name))
		}
		for _, c := range []byte(name) {
			if c <= ' ' || c > '~' || c == ':' {
				t.Errorf("%q holds %q", name, c)
			}
		}
	})
}
