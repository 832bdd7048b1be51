package quietio

import (
	"io"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Conn is a TCP connection whose Read and Write are raw system calls. The
// rest (deadlines, Close, addresses) is the TCPConn's.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn

	// One Read and one Write at a time, as a tls.Conn calls them: the
	// callbacks are bound once and work on these.
	rb, wb       []byte
	rn, wn       int
	rerr, werr   unix.Errno
	reader, writ func(fd uintptr) bool
}

// NewConn wraps c.
func NewConn(c *net.TCPConn) (*Conn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	q := &Conn{TCPConn: c, rc: rc}
	q.reader, q.writ = q.read1, q.write1
	return q, nil
}

// Read reads into b; io.EOF when the peer has closed.
func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.rb, c.rn, c.rerr = b, 0, 0
	err := c.rc.Read(c.reader)
	c.rb = nil
	switch {
	case err != nil:
		return 0, err
	case c.rerr != 0:
		return 0, c.rerr
	case c.rn == 0:
		return 0, io.EOF
	}
	return c.rn, nil
}

func (c *Conn) read1(fd uintptr) bool {
	n, errno, ready := call(unix.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(c.rb))), uintptr(len(c.rb)))
	c.rn, c.rerr = n, errno
	return ready
}

// Write writes all of b, waiting while the socket's buffer is full.
func (c *Conn) Write(b []byte) (int, error) {
	c.wb, c.wn, c.werr = b, 0, 0
	err := c.rc.Write(c.writ)
	n := c.wn
	c.wb = nil
	switch {
	case err != nil:
		return n, err
	case c.werr != 0:
		return n, c.werr
	}
	return n, nil
}

func (c *Conn) write1(fd uintptr) bool {
	for c.wn < len(c.wb) {
		rest := c.wb[c.wn:]
		n, errno, ready := call(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(rest))), uintptr(len(rest)))
		if !ready {
			return false
		}
		if errno != 0 {
			c.werr = errno
			return true
		}
		c.wn += n
	}
	return true
}
