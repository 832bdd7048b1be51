package spread

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// spliced is a carried connection copied in the kernel: the client's and
// the backend's sockets, and a pipe each way holding what was read from
// one and not yet written to the other. The sockets and the pipes' read
// ends are all its state: a process that adopts them (after a restart or
// a SIGKILL of ours, from systemd's descriptor store) carries on without
// losing a byte.
type spliced struct {
	c, b     *net.TCPConn
	up, down kpipe // client to backend, backend to client
	once     sync.Once
	detached atomic.Bool // left to a successor: stop copying, cut nothing
}

// kpipe is a kernel pipe, both ends non-blocking; an adopted one has only
// its read end (w < 0): drained, it is replaced by a pipe of our own.
type kpipe struct{ r, w int }

func newKpipe() (kpipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return kpipe{-1, -1}, fmt.Errorf("pipe: %w", err)
	}
	return kpipe{r: fds[0], w: fds[1]}, nil
}

// held is how many bytes the pipe holds.
func (p kpipe) held() (int, error) { return unix.IoctlGetInt(p.r, unix.TIOCINQ) } // FIONREAD

// size is how many bytes the pipe takes at most.
func (p kpipe) size() (int, error) { return unix.FcntlInt(uintptr(p.w), unix.F_GETPIPE_SZ, 0) }

func (p kpipe) close() {
	for _, fd := range []int{p.r, p.w} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// newSpliced makes the pipes of a connection between c and b.
func newSpliced(c, b *net.TCPConn) (*spliced, error) {
	up, err := newKpipe()
	if err != nil {
		return nil, err
	}
	down, err := newKpipe()
	if err != nil {
		up.close()
		return nil, err
	}
	return &spliced{c: c, b: b, up: up, down: down}, nil
}

// run copies both ways until both are done, as pipe: the end of one
// direction closes the sending side of the other connection, an error
// closes both. Then our descriptors are closed. It says whether the
// connection was detached (left to a successor, cut nowhere).
func (s *spliced) run() (detached bool) {
	done := make(chan struct{})
	go func() { s.copy(s.b, s.c, &s.up); close(done) }()
	s.copy(s.c, s.b, &s.down)
	<-done
	s.close()
	return s.detached.Load()
}

// detach stops the copying wherever it is without touching the
// connection: what one side sent and the other has not received stays in
// the pipes, for the successor that adopts the descriptors.
func (s *spliced) detach() {
	s.detached.Store(true)
	past := time.Unix(1, 0)
	s.c.SetDeadline(past)
	s.b.SetDeadline(past)
}

// close closes both connections and the pipes, once. Not detached, both
// connections are shut down first: the store's copies of their sockets
// would otherwise keep them open until it forgets them.
func (s *spliced) close() {
	s.once.Do(func() {
		if !s.detached.Load() {
			shutdown(s.c)
			shutdown(s.b)
		}
		s.c.Close()
		s.b.Close()
		s.up.close()
		s.down.close()
	})
}

// cut ends the connection, both sides, as a backend gone down does: its
// copies stop, run closes the rest.
func (s *spliced) cut() {
	shutdown(s.c)
	shutdown(s.b)
	s.c.Close()
	s.b.Close()
}

// shutdown ends c both ways, whoever else holds its socket.
func shutdown(c *net.TCPConn) {
	if rc, err := c.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_RDWR) })
	}
}

func (s *spliced) copy(dst, src *net.TCPConn, p *kpipe) {
	err := splice(dst, src, p)
	switch {
	case s.detached.Load():
		// Closing our descriptors ends nothing: the store holds copies.
	case err == nil:
		dst.CloseWrite()
	default:
		shutdown(dst)
		shutdown(src)
		dst.Close()
		src.Close()
	}
}

// spliceFlags: move pages rather than copy them; never block in the call
// (the sockets' waits are the runtime poller's).
const spliceFlags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK

// splice moves src's bytes to dst through p until src ends (nil) or
// fails. What p holds when it starts (a predecessor's bytes) goes first;
// p is emptied before src is read again, so a read never finds it full.
// An adopted pipe (no write end) is replaced by a new one once drained.
func splice(dst, src *net.TCPConn, p *kpipe) error {
	rc, err := src.SyscallConn()
	if err != nil {
		return err
	}
	wc, err := dst.SyscallConn()
	if err != nil {
		return err
	}
	held, err := p.held()
	if err != nil {
		return fmt.Errorf("pipe contents: %w", err)
	}
	size := 0
	for {
		for held > 0 {
			n, err := spliceOn(wc.Write, func(fd int) (int64, error) { return unix.Splice(p.r, nil, fd, nil, held, spliceFlags) })
			if err != nil {
				return err
			}
			if n == 0 {
				return errors.New("a pipe emptied under us")
			}
			held -= int(n)
		}
		if p.w < 0 { // a predecessor's, drained: ours from now on
			np, err := newKpipe()
			if err != nil {
				return err
			}
			p.close()
			*p = np
		}
		if size == 0 {
			if size, err = p.size(); err != nil {
				return fmt.Errorf("pipe size: %w", err)
			}
		}
		n, err := spliceOn(rc.Read, func(fd int) (int64, error) { return unix.Splice(fd, nil, p.w, nil, size, spliceFlags) })
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // the end of src
		}
		held = int(n)
	}
}

// spliceOn makes one splice(2) call with a socket's descriptor once the
// runtime's poller finds the socket ready: wait is its RawConn's Read (the
// socket is spliced from) or Write (to); the call itself never blocks.
func spliceOn(wait func(func(uintptr) bool) error, call func(fd int) (int64, error)) (int64, error) {
	var n int64
	var serr error
	if err := wait(func(fd uintptr) bool {
		n, serr = call(int(fd))
		return !errors.Is(serr, unix.EAGAIN)
	}); err != nil {
		return 0, err
	}
	return n, serr
}
