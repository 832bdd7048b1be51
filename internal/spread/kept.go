package spread

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Keeper keeps descriptors beyond the process (systemd's descriptor store,
// internal/fdstore): a later run of ours gets them back and adopts the
// connections they make up (Adopted).
type Keeper interface {
	Keep(name string, fds ...int) error
	Forget(name string) error
}

// A carried connection is kept as four names: its client socket, its
// backend socket, and the two ends of each pipe.
const (
	roleClient  = 'c'
	roleBackend = 'b'
	roleUp      = 'u' // the pipe from the client to the backend
	roleDown    = 'd' // the pipe from the backend to the client
	keptPrefix  = "spread."
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
	if strings.ContainsAny(id, ".:") {
		return "", 0, false
	}
	switch role {
	case roleClient, roleBackend, roleUp, roleDown:
		return id, role, true
	}
	return "", 0, false
}

// keeper names and keeps the carried connections of one run.
type keeper struct {
	k   Keeper
	run string // unique to this run: a successor's names never meet ours
	seq atomic.Uint64
}

func newKeeper(k Keeper) *keeper {
	if k == nil {
		return nil
	}
	var b [6]byte
	rand.Read(b[:])
	return &keeper{k: k, run: hex.EncodeToString(b[:])}
}

// keep stores s's descriptors and returns what forgets them; a store
// that refuses is an error, and nothing of s is left in it.
func (k *keeper) keep(s *spliced) (forget func(), err error) {
	if k == nil {
		return func() {}, nil
	}
	id := fmt.Sprintf("%s-%d", k.run, k.seq.Add(1))
	return k.keepAs(id, s)
}

// forgetter returns what forgets the connection id.
func (k *keeper) forgetter(id string) func() {
	if k == nil {
		return func() {}
	}
	return func() {
		for _, r := range roles {
			k.k.Forget(keptName(id, r))
		}
	}
}

// keepAs stores s under id.
func (k *keeper) keepAs(id string, s *spliced) (forget func(), err error) {
	forget = k.forgetter(id)
	for _, r := range roles {
		switch r {
		case roleClient:
			err = keepConn(k.k, keptName(id, r), s.c)
		case roleBackend:
			err = keepConn(k.k, keptName(id, r), s.b)
		case roleUp:
			err = k.k.Keep(keptName(id, r), s.up.r, s.up.w)
		case roleDown:
			err = k.k.Keep(keptName(id, r), s.down.r, s.down.w)
		}
		if err != nil {
			forget()
			return func() {}, err
		}
	}
	return forget, nil
}

func keepConn(k Keeper, name string, c *net.TCPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var kerr error
	if err := rc.Control(func(fd uintptr) { kerr = k.Keep(name, int(fd)) }); err != nil {
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
	kp := newKeeper(k)
	for _, a := range as {
		a.Close()
		kp.forgetter(a.ID)()
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
			if k != nil {
				for _, r := range roles {
					k.Forget(keptName(id, r))
				}
			}
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
		want := 1
		if r == roleUp || r == roleDown {
			want = 2
		}
		if len(p[r]) != want {
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
	up, err1 := pipeOf(p[roleUp])
	down, err2 := pipeOf(p[roleDown])
	if err := errors.Join(err1, err2); err != nil {
		c.Close()
		b.Close()
		up.close()
		down.close()
		return Adopted{}, err
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

// pipeOf is a pipe of copies of its two ends, told apart by their access
// mode, non-blocking.
func pipeOf(fs []*os.File) (kpipe, error) {
	p := kpipe{-1, -1}
	for _, f := range fs {
		rc, err := f.SyscallConn()
		if err != nil {
			p.close()
			return kpipe{-1, -1}, err
		}
		var fd int
		var ferr error
		rc.Control(func(raw uintptr) {
			var fl int
			if fl, ferr = unix.FcntlInt(raw, unix.F_GETFL, 0); ferr != nil {
				return
			}
			if fd, ferr = unix.FcntlInt(raw, unix.F_DUPFD_CLOEXEC, 0); ferr != nil {
				return
			}
			if ferr = unix.SetNonblock(fd, true); ferr != nil {
				unix.Close(fd)
				return
			}
			end := &p.r
			if fl&unix.O_ACCMODE == unix.O_WRONLY {
				end = &p.w
			}
			if fl&unix.O_ACCMODE == unix.O_RDWR || *end >= 0 {
				unix.Close(fd)
				ferr = errors.New("not the two ends of a pipe")
				return
			}
			*end = fd
		})
		if ferr != nil {
			p.close()
			return kpipe{-1, -1}, fmt.Errorf("pipe: %w", ferr)
		}
	}
	if p.r < 0 || p.w < 0 {
		p.close()
		return kpipe{-1, -1}, errors.New("pipe: an end is missing")
	}
	return p, nil
}
