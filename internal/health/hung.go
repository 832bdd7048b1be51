package health

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"time"
)

// A hung apiserver: it accepts, its process, TLS and handler chain work,
// and what a check waits for (etcd) does not. The probe watches a
// request's first byte (silence, await); the checker asks /livez/ping
// when none has come by HUNG_AFTER (answersPing).

// silence is what to do when a request's answer has not begun by a point
// in time: ask stuck once, and told yes, give up with errStuck. The zero
// silence watches nothing.
type silence struct {
	at    time.Time
	stuck func() bool
}

// errStuck ends a request whose silence was judged stuck.
var errStuck = errors.New("no answer, judged stuck")

// await waits for the answer's first byte until sil.at; none by then, it
// asks sil.stuck (the caller's goroutine, so stuck may use the network) and
// returns errStuck when told so, else gives the read ctx's deadline again.
// Without a watch, with sil.at past (the request went out after it) or not
// before ctx's deadline, it does nothing: ReadResponse waits as before.
func (p *probe) await(ctx context.Context, conn *tls.Conn, sil silence) error {
	if sil.stuck == nil || p.br.Buffered() > 0 || !time.Now().Before(sil.at) {
		return nil // no watch, an answer already in, or asked after the point: not watched
	}
	if end, ok := ctx.Deadline(); ok && !sil.at.Before(end) {
		return nil
	}
	// The watch: an alarm (a timerfd) makes the read give up at sil.at, as
	// a read deadline would, without a runtime timer (probe.roundTrip).
	a := p.alarmFor()
	a.Set(sil.at, func() { _ = conn.SetReadDeadline(aLongTimeAgo) })
	defer func() {
		// The rest of the answer is read with no deadline again, and
		// ctx's end still unblocks it: roundTrip's AfterFunc has set a
		// past deadline if ctx ended, which must stay.
		a.Clear()
		_ = conn.SetReadDeadline(time.Time{})
		if ctx.Err() != nil {
			_ = conn.SetReadDeadline(aLongTimeAgo)
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := p.br.Peek(1)
	if !errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
		return err // an answer (nil), a dead connection, or ctx's end
	}
	if sil.stuck() && !p.answeredMeanwhile(conn) {
		return errStuck
	}
	return ctx.Err() // cancelled while asking, or answered meanwhile (nil)
}

// answeredMeanwhile says whether the answer began while stuck was asked
// (the ping, the stall's judge): a last look of a few milliseconds, so an
// answer late by that much is not called hung.
func (p *probe) answeredMeanwhile(conn *tls.Conn) bool {
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
	_, err := p.br.Peek(1)
	return err == nil
}

// answersPing asks /livez/ping, which needs nothing but the apiserver's
// process, TLS and handler chain, on a new connection and without the token
// (no token review either), and reports how long the answer took and
// whether it came within a tenth of HungAfter. Any status will do: RBAC
// grants anonymous users only /livez itself, so a 403 (or a 401 without
// anonymous auth) is the usual answer, and just as fast. Slower, the whole
// apiserver is slow (CPU, overload), not hung: the check waits on as usual.
func (c *Checker) answersPing(ctx context.Context) (time.Duration, bool) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HungAfter/10)
	defer cancel()
	start := time.Now()
	_, err := c.pinger.get(ctx, c.pinger.url, http.Header{"User-Agent": {"novaedge-cpvip"}})
	c.pinger.close()
	return time.Since(start), err == nil
}

// networkStall asks cfg.Stalls, if set, whether a stall whose ping came
// fast is the network's, logs it when so, and returns what was seen.
func (c *Checker) networkStall(ctx context.Context, pinged time.Duration) (bool, string) {
	if c.cfg.Stalls == nil {
		return false, ""
	}
	network, seen := c.cfg.Stalls.NetworkStall(ctx)
	if network {
		c.log.Info("A check stalls while etcd's connections lose segments: not a hung apiserver, waiting on",
			"hung_after", c.cfg.HungAfter, "ping", pinged.Round(time.Millisecond), "seen", seen)
	}
	return network, seen
}
