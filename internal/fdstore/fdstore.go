// Package fdstore keeps file descriptors in systemd's file descriptor
// store: each is sent to the service manager with FDSTORE=1 and a name
// (sd_pid_notify_with_fds), systemd holds a copy across the process's end
// — a restart, a crash, SIGKILL — and hands every one still stored to the
// next run of the unit (LISTEN_FDS, LISTEN_FDNAMES), until it is removed
// (FDSTOREREMOVE=1) or the unit stops. The unit needs NotifyAccess= (so
// systemd reads the messages) and FileDescriptorStoreMax= (how many it
// keeps). go-systemd's daemon.SdNotify sends no descriptors: the message
// is written here; go-systemd's activation reads what comes back.
package fdstore

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/coreos/go-systemd/v22/activation"
	"golang.org/x/sys/unix"
)

// Store sends descriptors to the service manager's store.
type Store struct {
	fd   int
	addr *unix.SockaddrUnix
}

// FromEnv opens the service manager's notification socket
// ($NOTIFY_SOCKET); nil without one (not under systemd, or the unit's
// NotifyAccess= is none).
func FromEnv() (*Store, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil, nil
	}
	if path[0] == '@' { // abstract namespace
		path = "\x00" + path[1:]
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the service manager's notification socket: %w", err)
	}
	return &Store{fd: fd, addr: &unix.SockaddrUnix{Name: path}}, nil
}

// ErrName is a name systemd would refuse: printable ASCII without ':' (the
// separator of LISTEN_FDNAMES), 1 to 255 characters.
var ErrName = errors.New("fdstore: invalid descriptor name")

// ValidName says whether systemd accepts name for stored descriptors.
func ValidName(name string) bool {
	if name == "" || len(name) > 255 {
		return false
	}
	for i := range len(name) {
		if c := name[i]; c < 0x21 || c > 0x7e || c == ':' {
			return false
		}
	}
	return true
}

// Keep stores copies of fds under name; the caller keeps its own. poll
// false asks systemd not to drop them on a hang-up or an error (FDPOLL=0,
// systemd 246): a pipe's read end whose writer is gone still holds what
// was written.
func (s *Store) Keep(name string, poll bool, fds ...int) error {
	if !ValidName(name) {
		return fmt.Errorf("%w: %q", ErrName, name)
	}
	state := "FDSTORE=1\nFDNAME=" + name
	if !poll {
		state += "\nFDPOLL=0"
	}
	return s.send(state, unix.UnixRights(fds...))
}

// Forget removes every descriptor stored under name; systemd closes its
// copies (a socket whose last copy that was ends).
func (s *Store) Forget(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("%w: %q", ErrName, name)
	}
	return s.send("FDSTOREREMOVE=1\nFDNAME="+name, nil)
}

func (s *Store) send(state string, oob []byte) error {
	if err := unix.Sendmsg(s.fd, []byte(state), oob, s.addr, unix.MSG_NOSIGNAL); err != nil {
		return fmt.Errorf("fdstore: %s: %w", strings.ReplaceAll(state, "\n", " "), err)
	}
	return nil
}

// Close closes the notification socket (the store stays).
func (s *Store) Close() error { return unix.Close(s.fd) }

// Inherited returns the descriptors the service manager passed this run
// (the store's, and any other it passes), by name, in the order passed;
// each is close-on-exec, and LISTEN_* leave the environment.
func Inherited() map[string][]*os.File {
	byName := map[string][]*os.File{}
	for _, f := range activation.Files(true) {
		byName[f.Name()] = append(byName[f.Name()], f)
	}
	return byName
}
