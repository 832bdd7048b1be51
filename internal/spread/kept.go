package spread

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Keeper keeps descriptors beyond the process (systemd's descriptor store,
// internal/fdstore): a later run of ours gets them back and adopts the
// connections they make up (Adopted). poll false asks the store not to
// drop a descriptor when it reports a hang-up (a pipe's read end whose
// writer is gone still holds what was written).
type Keeper interface {
	Keep(name string, poll bool, fds ...int) error
	Forget(name string) error
}

// MaxKept is how many carried connections are kept at most; the others
// are carried as well but end with the process. The bound is the
// service manager's: systemd passes the descriptors' names in one
// environment variable (LISTEN_FDNAMES), which exec limits to 128 KiB,
// and four names of at most 15 bytes a connection fit 2000 times in that;
// it also keeps systemd's own work on its store small.
const MaxKept = 1500

// A carried connection is kept as four descriptors: its client socket, its
// backend socket, and the read end of each pipe (what its predecessor read
// and had not written yet; the successor drains it, then uses pipes of its
// own).
const (
	roleClient  = 'c'
	roleBackend = 'b'
	roleUp      = 'u' // the pipe from the client to the backend
	roleDown    = 'd' // the pipe from the backend to the client
	keptPrefix  = "s"
)

var roles = [...]byte{roleClient, roleBackend, roleUp, roleDown}

// keptName is the store's name of one role of the connection id.
func keptName(id string, role byte) string { return keptPrefix + id + "." + string(role) }

// parseKept reads a name keptName wrote.
func parseKept(name string) (id string, role byte, ok bool) {
	rest, ok := strings.CutPrefix(name, keptPrefix)
	if !ok || len(rest) < 3 || rest[len(rest)-2] != '.' {
		return "", 0, false
	}
	id, role = rest[:len(rest)-2], rest[len(rest)-1]
	if !validID(id) {
		return "", 0, false
	}
	switch role {
	case roleClient, roleBackend, roleUp, roleDown:
		return id, role, true
	}
	return "", 0, false
}

// validID: a run and a sequence number, base 36, joined by '-'.
func validID(id string) bool {
	run, seq, ok := strings.Cut(id, "-")
	return ok && run != "" && seq != "" && base36(run) && base36(seq)
}

func base36(s string) bool {
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// errFull: MaxKept connections are kept already.
var errFull = errors.New("the store holds MaxKept connections already")

// keeper names and keeps the carried connections of one run, MaxKept at
// most (those it adopted included).
type keeper struct {
	k     Keeper
	run   string // unique to this run: a successor's names never meet ours
	seq   atomic.Uint64
	count atomic.Int64
}

func newKeeper(k Keeper) *keeper {
	if k == nil {
		return nil
	}
	var b [4]byte
	rand.Read(b[:])
	return &keeper{k: k, run: strconv.FormatUint(uint64(binary.BigEndian.Uint32(b[:])), 36)}
}

// keep stores s's descriptors and returns what forgets them; a store
// that refuses, or is full, is an error, and nothing of s is left in it.
func (k *keeper) keep(s *spliced) (forget func(), err error) {
	if k == nil {
		return func() {}, nil
	}
	if k.count.Add(1) > MaxKept {
		k.count.Add(-1)
		return func() {}, errFull
	}
	id := k.run + "-" + strconv.FormatUint(k.seq.Add(1), 36)
	forget = k.forgetter(id)
	for _, r := range roles {
		switch r {
		case roleClient:
			err = keepConn(k.k, keptName(id, r), s.c)
		case roleBackend:
			err = keepConn(k.k, keptName(id, r), s.b)
		case roleUp:
			err = k.k.Keep(keptName(id, r), false, s.up.r)
		case roleDown:
			err = k.k.Keep(keptName(id, r), false, s.down.r)
		}
		if err != nil {
			forget()
			return func() {}, err
		}
	}
	return forget, nil
}

// adopted counts a connection a previous run kept, now this run's.
func (k *keeper) adopted() {
	if k != nil {
		k.count.Add(1)
	}
}

// forgetter returns what forgets the connection id, once.
func (k *keeper) forgetter(id string) func() {
	if k == nil {
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			forget(k.k, id)
			k.count.Add(-1)
		})
	}
}

// forget removes every name of the connection id from k (if not nil).
func forget(k Keeper, id string) {
	if k == nil {
		return
	}
	for _, r := range roles {
		k.Forget(keptName(id, r))
	}
}

func keepConn(k Keeper, name string, c *net.TCPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var kerr error
	if err := rc.Control(func(fd uintptr) { kerr = k.Keep(name, true, int(fd)) }); err != nil {
		return err
	}
	return kerr
}

// Adopted is a connection a previous run carried, rebuilt from the
// descriptors it kept: its id (its names in the store) and the backend
// address it was carried to.
type Adopted struct {
	ID      string
	Backend netip.AddrPort
	s       *spliced
}

// Close ends an adopted connection that is not carried on.
func (a Adopted) Close() { a.s.close() }

// Drop closes adopted connections that are not carried on and removes
// them from k (if not nil).
func Drop(as []Adopted, k Keeper) {
	for _, a := range as {
		a.Close()
		forget(k, a.ID)
	}
}

// AdoptFiles rebuilds the connections of inherited descriptors (by name,
// as fdstore.Inherited returns them). Every name of ours is taken: a
// connection whose four parts are not all there is closed and forgotten
// (k, if not nil), as are descriptors that make none. Names not of ours
// are left in inherited.
func AdoptFiles(inherited map[string][]*os.File, k Keeper) (adopted []Adopted, errs []error) {
	parts := map[string]map[byte][]*os.File{}
	for name, fs := range inherited {
		id, role, ok := parseKept(name)
		if !ok {
			continue
		}
		delete(inherited, name)
		if parts[id] == nil {
			parts[id] = map[byte][]*os.File{}
		}
		parts[id][role] = fs
	}
	for id, p := range parts {
		a, err := adoptOne(id, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("carried connection %s: %w", id, err))
			forget(k, id)
			continue
		}
		adopted = append(adopted, a)
	}
	return adopted, errs
}

// adoptOne makes one connection of its parts; they are closed either way
// (the connection holds copies).
func adoptOne(id string, p map[byte][]*os.File) (Adopted, error) {
	defer func() {
		for _, fs := range p {
			for _, f := range fs {
				f.Close()
			}
		}
	}()
	for _, r := range roles {
		if len(p[r]) != 1 {
			return Adopted{}, fmt.Errorf("%d descriptors named %q", len(p[r]), string(r))
		}
	}
	c, err := tcpOf(p[roleClient][0])
	if err != nil {
		return Adopted{}, fmt.Errorf("client socket: %w", err)
	}
	b, err := tcpOf(p[roleBackend][0])
	if err != nil {
		c.Close()
		return Adopted{}, fmt.Errorf("backend socket: %w", err)
	}
	up, err1 := pipeOf(p[roleUp][0])
	down, err2 := pipeOf(p[roleDown][0])
	if err := errors.Join(err1, err2); err != nil {
		c.Close()
		b.Close()
		up.close()
		down.close()
		return Adopted{}, err
	}
	if b.RemoteAddr() == nil || c.RemoteAddr() == nil { // reset while no process held it
		c.Close()
		b.Close()
		up.close()
		down.close()
		return Adopted{}, errors.New("a socket without a peer")
	}
	to, _ := netip.ParseAddrPort(b.RemoteAddr().String())
	return Adopted{ID: id, Backend: netip.AddrPortFrom(to.Addr().Unmap(), to.Port()), s: &spliced{c: c, b: b, up: up, down: down}}, nil
}

// tcpOf is a TCP connection on a copy of f's socket.
func tcpOf(f *os.File) (*net.TCPConn, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("not a TCP socket (%T)", c)
	}
	return tc, nil
}

// pipeOf is the read end of a predecessor's pipe (a copy of f,
// non-blocking): what it holds goes first, then a pipe of our own.
func pipeOf(f *os.File) (kpipe, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return kpipe{-1, -1}, err
	}
	p := kpipe{-1, -1}
	var ferr error
	if err := rc.Control(func(raw uintptr) {
		var fl int
		if fl, ferr = unix.FcntlInt(raw, unix.F_GETFL, 0); ferr != nil {
			return
		}
		if fl&unix.O_ACCMODE != unix.O_RDONLY {
			ferr = errors.New("not the read end of a pipe")
			return
		}
		if p.r, ferr = unix.FcntlInt(raw, unix.F_DUPFD_CLOEXEC, 0); ferr != nil {
			p.r = -1
			return
		}
		ferr = unix.SetNonblock(p.r, true)
	}); err != nil {
		ferr = err
	}
	if ferr != nil {
		p.close()
		return kpipe{-1, -1}, fmt.Errorf("pipe: %w", ferr)
	}
	return p, nil
}
