package health

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/novaedge/cpvip/internal/quietio"
)

// probe asks URLs of one server over one kept HTTPS connection, all on the
// caller's goroutine: the request is written and its answer read right
// there. net/http's client hands every request to a writer and a reader
// goroutine of the connection; those hand-overs were most of the idle
// daemon's CPU time. A probe is used by one goroutine at a time.
type probe struct {
	url   *url.URL // the liveness URL; its host is the server every request goes to
	tls   *tls.Config
	conn  *tls.Conn
	br    *bufio.Reader // reads through lim
	lim   *budget       // what an answer may still read from the connection
	bw    *bufio.Writer
	body  []byte         // the last answer's body, up to maxBody, reused
	alarm *quietio.Alarm // idle's wait, await's watch (alarm); nil until the first
	// dialTCP opens the TCP connection to an address (host:port of an IP
	// address, or a name other than localhost); net.Dialer's in production.
	dialTCP func(ctx context.Context, address string) (net.Conn, error)
	// closed, when set, runs when a request on the kept connection fails
	// and is tried again on a new one: most likely the server closed it
	// (Checker.Run: in doubt until the answer).
	closed func()
}

// maxBody is how much of an answer's body is read (and thrown away) so the
// connection can be used again; a longer body closes it.
const maxBody = 64 << 10

// maxAnswer is the most one answer may read from the connection, its
// status line and headers included: a server that sends more (endless
// headers) fails the check, instead of growing the daemon's memory until
// the check's time-out.
const maxAnswer = maxBody + 64<<10

// errAnswerTooLarge is the failure of a check whose answer exceeds maxAnswer.
var errAnswerTooLarge = errors.New("the answer's headers and body exceed 128 KiB")

// budget reads from r at most n bytes more, then fails.
type budget struct {
	r io.Reader
	n int
}

func (b *budget) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, errAnswerTooLarge
	}
	if len(p) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= n
	return n, err
}

// newProbe makes a probe of the server of rawURL that verifies nothing until
// setRoots gives it a CA; serverName (empty: the URL's host) is the name
// verified then.
func newProbe(rawURL, serverName string) (*probe, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("health URL %q: %w", rawURL, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("health URL %q: want https://host:port/path", rawURL)
	}
	if serverName == "" {
		serverName = u.Hostname()
	}
	cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // until setRoots gives a CA
	var d net.Dialer
	dialTCP := func(ctx context.Context, address string) (net.Conn, error) { return d.DialContext(ctx, "tcp", address) }
	return &probe{url: u, tls: cfg, dialTCP: dialTCP}, nil
}

// setRoots verifies the server against pool from the next connection on
// (nil: verify nothing) and closes the kept one.
func (p *probe) setRoots(pool *x509.CertPool) {
	p.tls.RootCAs, p.tls.InsecureSkipVerify = pool, pool == nil
	p.close()
}

// verifies reports whether the probe's connections verify the server
// against a CA (setRoots gave it one).
func (p *probe) verifies() bool { return !p.tls.InsecureSkipVerify }

// get sends GET u (a URL of the probe's server) with the headers and returns
// the answer's status; the body's first maxBody bytes stay in p.body until
// the next request. A kept connection the server has closed meanwhile is
// replaced once, as net/http does for idempotent requests. Past ctx's
// deadline the error is context.DeadlineExceeded.
func (p *probe) get(ctx context.Context, u *url.URL, header http.Header) (int, error) {
	return p.getWatched(ctx, u, header, silence{})
}

// getWatched is get with a watch on the answer's first byte (sil).
func (p *probe) getWatched(ctx context.Context, u *url.URL, header http.Header, sil silence) (int, error) {
	req := &http.Request{Method: http.MethodGet, URL: u, Host: p.url.Host, Header: header,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	for attempt := 0; ; attempt++ {
		reused := p.conn != nil
		status, err := p.roundTrip(ctx, req, sil)
		if errors.Is(err, errStuck) {
			p.close()
			return 0, err
		}
		if err == nil {
			return status, nil
		}
		p.close()
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) { // the connection's deadline is ctx's
			return 0, context.DeadlineExceeded
		}
		if !reused || attempt > 0 {
			return 0, err
		}
		if p.closed != nil {
			p.closed()
		}
	}
}

func (p *probe) roundTrip(ctx context.Context, req *http.Request, sil silence) (int, error) {
	if p.conn == nil {
		if err := p.dial(ctx); err != nil {
			return 0, err
		}
	}
	conn := p.conn
	// No deadline on the connection: ctx's end unblocks it (below). A
	// connection's deadline is a runtime timer, which wakes the idle daemon
	// at its time even when the answer came long before (quietio.Alarm).
	_ = conn.SetDeadline(time.Time{})
	// Cancelled (ctx's timeout too): unblock. It may run after we returned:
	// conn, not p.conn, and a connection it may still touch is not used
	// again.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(aLongTimeAgo) })
	defer func() {
		if !stop() {
			p.close()
		}
	}()
	if err := req.Write(p.bw); err != nil {
		return 0, err
	}
	if err := p.bw.Flush(); err != nil {
		return 0, err
	}
	if err := p.await(ctx, conn, sil); err != nil {
		return 0, err
	}
	// Bytes already buffered were counted against the previous answer's
	// budget (a pipelined server's): they are few, read at most once.
	p.lim.n = maxAnswer
	resp, err := http.ReadResponse(p.br, req)
	if err != nil {
		return 0, err
	}
	buf := bytes.NewBuffer(p.body[:0])
	n, err := io.Copy(buf, io.LimitReader(resp.Body, maxBody+1))
	resp.Body.Close()
	p.body = buf.Bytes()
	if err != nil {
		return 0, err // a body cut short is no answer (a drain's line may be in the rest)
	}
	if resp.Close || n > maxBody {
		p.close()
	}
	return resp.StatusCode, nil
}

// idle waits until the time until, or less: it returns early, reporting
// closed, when the server closes the kept connection (or sends on it,
// which HTTP/1.1 never does between answers). A server process that dies
// or begins to shut down closes its connections at once, so this notices a
// dead apiserver without a check and without a goroutine: the wait is a
// read with a deadline on the caller's goroutine.
func (p *probe) idle(ctx context.Context, until time.Time) (closed bool) {
	conn, a := p.conn, p.alarmFor()
	if conn == nil {
		due := make(chan struct{})
		a.Set(until, func() { close(due) })
		select {
		case <-ctx.Done():
			a.Clear()
		case <-due:
		}
		return false
	}
	_ = conn.SetReadDeadline(time.Time{}) // an earlier wait's alarm
	a.Set(until, func() { _ = conn.SetReadDeadline(aLongTimeAgo) })
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(aLongTimeAgo) })
	_, err := p.br.Peek(1)
	stop()
	a.Clear()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return false // the next request clears the deadline (roundTrip)
	}
	p.close()
	return ctx.Err() == nil
}

func (p *probe) dial(ctx context.Context) error {
	raw, err := dialServer(ctx, p.dialTCP, p.url)
	if err != nil {
		return err
	}
	q, err := quietio.NewConn(raw.(*net.TCPConn)) // the check's reads and writes do not wake the runtime's sysmon
	if err != nil {
		raw.Close()
		return err
	}
	c := tls.Client(q, p.tls)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return err
	}
	p.lim = &budget{r: c, n: maxAnswer}
	p.conn, p.br, p.bw = c, bufio.NewReader(p.lim), bufio.NewWriter(c)
	return nil
}

// aLongTimeAgo is a read deadline that unblocks a read at once (a past
// deadline arms no runtime timer).
var aLongTimeAgo = time.Unix(1, 0)

// alarmFor returns the probe's alarm, made on first use: the timer of
// idle's wait and of await's watch (a timerfd, quietio.Alarm).
func (p *probe) alarmFor() *quietio.Alarm {
	if p.alarm == nil {
		p.alarm = quietio.NewAlarm()
	}
	return p.alarm
}

// stop closes the connection and the alarm: the probe is not used again.
func (p *probe) stop() {
	p.close()
	if p.alarm != nil {
		p.alarm.Close()
		p.alarm = nil
	}
}

func (p *probe) close() {
	if p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
}
