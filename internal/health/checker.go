package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/novaedge/cpvip/internal/quietio"
)

// Config is what a Checker needs; cmd fills it from config.Config.
type Config struct {
	URL      string // the liveness endpoint, https://localhost:6443/livez
	ReadyURL string // the readiness endpoint whose shutdown check tells a drain; empty = no drain detection
	Interval time.Duration
	// FastInterval is the time between checks after a failed one, until the
	// thresholds decide (HAProxy's fastinter); 0 or more than Interval =
	// Interval.
	FastInterval  time.Duration
	Timeout       time.Duration
	FailThreshold int
	RiseThreshold int
	// HungAfter: a check with no answer by then while the apiserver answers
	// /livez/ping within a tenth of it finds a hung apiserver (Result.Hung:
	// FAIL_THRESHOLD-1 failures). 0, or not below Timeout: never.
	HungAfter time.Duration
	// Stalls, when set, is asked once the ping answered fast whether the
	// stall is the network's (internal/etcdwatch: etcd on this host reads
	// what it is sent while its connections lose segments); told so, the
	// check is not hung and waits on to Timeout. nil: a fast ping alone
	// finds a hung apiserver.
	Stalls    StallJudge
	TokenPath string
	// CAFiles are where the cluster CA may be, the first that exists wins
	// (watched: one that appears later is used from the next check). While
	// none exists the apiserver is not verified.
	CAFiles []string
	// ServerName is the name verified in the apiserver's certificate;
	// empty = the URL's host.
	ServerName string
	// InsecureSkipVerify verifies nothing, CA or not, and sends the token
	// all the same. Off, the token goes only over a verified connection.
	InsecureSkipVerify bool
}

// StallJudge tells a stall of the check that the network causes (every
// apiserver stalls now and then; moving the VIP resets clients for
// nothing) from one of what the apiserver waits for.
type StallJudge interface {
	// Mark is told as each check begins: what it needs to know of the
	// time before a stall (loss counters) it records then.
	Mark()
	NetworkStall(ctx context.Context) (bool, string)
}

// Outcome is what one check found; the thresholds judge each kind its own
// way (thresholds.judge).
type Outcome int

// The outcomes. The zero value is Failed.
const (
	// Failed: no answer in time, an error status, a TLS or token problem:
	// the apiserver's, or the network's, or a load every apiserver shares.
	Failed Outcome = iota
	// Passed: the apiserver answered ready (or live) in time.
	Passed
	// Refused: a new connection was refused or reset: no process serves
	// the port.
	Refused
	// Drained: the apiserver has begun a graceful shutdown.
	Drained
	// Hung: no answer by HungAfter while /livez/ping answered fast: what
	// the check waits for (etcd) does not.
	Hung
)

// String names the outcome.
func (o Outcome) String() string {
	return [...]string{"failed", "passed", "refused", "drained", "hung"}[o]
}

// passed is Passed when ok, else Failed.
func passed(ok bool) Outcome {
	if ok {
		return Passed
	}
	return Failed
}

// Result is one check's outcome and what it saw.
type Result struct {
	Outcome Outcome
	// Stalled: no answer by HungAfter, and the stall was the network's
	// (Config.Stalls): the check waited on; passed or not, a stall every
	// apiserver may share (it does not count towards settling).
	Stalled  bool
	Status   int    // HTTP status, 0 when no answer
	Reason   string // why it failed; empty when it passed
	Duration time.Duration
}

// OK says whether the check passed.
func (r Result) OK() bool { return r.Outcome == Passed }

// Certain says whether a failed check leaves no doubt that the apiserver
// does not serve: its port refuses (no process) or it is shutting down. A
// time-out or an error status may be the network's or a load every
// apiserver shares.
func (r Result) Certain() bool { return r.Outcome == Refused || r.Outcome == Drained }

// Transition is a change of State, or of Settled alone, with the result
// that caused it.
type Transition struct {
	State State
	// Changed: State changed; false when only Settled did.
	Changed bool
	// Settled: healthy, and the latest checks passed (SettleRun): this node
	// may take the VIP from a holder that fails its checks.
	Settled bool
	// Certain: not healthy, and the latest check leaves no doubt that the
	// apiserver does not serve (Result.Certain). Sent when it changes too:
	// an apiserver failing on time-outs that is then killed (refused) stays
	// unhealthy, but its holder now hands the VIP over at once.
	Certain bool
	// InDoubt: the apiserver closed the kept connection and the check that
	// the close started (or broke, and tried again) has not answered yet:
	// its process may be going away (killed, shutting down). Sent when it
	// begins (Judge.Closed) and cleared by the transition of that check's
	// result, sent whatever it says.
	InDoubt bool
	Last    Result
}

// Reason says why the state is what it is: the latest result's reason, or
// its status when it has none.
func (t Transition) Reason() string {
	if t.Last.Reason != "" {
		return t.Last.Reason
	}
	return fmt.Sprintf("status %d", t.Last.Status)
}

// Checker probes the apiserver's /livez. Run it in one goroutine: it issues
// one request at a time, so at most one is in flight.
type Checker struct {
	cfg     Config
	probe   *probe   // asks its URL, /livez, unless told another
	pinger  *probe   // asks /livez/ping on a connection of its own, closed after
	ready   *url.URL // nil: no drain detection
	tokens  *tokenSource
	ca      *caSource
	log     *slog.Logger
	judge   Judge
	tune    chan Timing // a reload's new timing, for Run
	lastErr string
	timeout *quietio.Alarm // a check's timeout (withTimeout); nil until the first
	// OnResult, if set, sees every result (for metrics). It must not block.
	OnResult func(Result)

	mu    sync.Mutex // guards stats, read by status
	stats Stats
}

// Stats is what status shows of the checks.
type Stats struct {
	State State
	// Settled: healthy, and the latest checks passed (Transition.Settled).
	Settled          bool
	Last             Result
	Success, Failure uint64
}

// Stats returns a snapshot of the checks so far.
func (c *Checker) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// URL is the checked endpoint.
func (c *Checker) URL() string { return c.cfg.URL }

// New builds a Checker.
func New(cfg Config, log *slog.Logger, now func() time.Time) (*Checker, error) {
	// Never through a proxy (the apiserver is local), no redirects followed,
	// one connection kept.
	p, err := newProbe(cfg.URL, cfg.ServerName)
	if err != nil {
		return nil, err
	}
	var ready *url.URL
	if cfg.ReadyURL != "" {
		if ready, err = url.Parse(cfg.ReadyURL); err != nil || ready.Host != p.url.Host {
			return nil, fmt.Errorf("readiness URL %q: not on the server of %q", cfg.ReadyURL, cfg.URL)
		}
	}
	if cfg.InsecureSkipVerify {
		log.Warn("TLS verification of the API server is off (INSECURE_SKIP_TLS_VERIFY): the token goes to whatever listens on its port", "url", cfg.URL)
	}
	ping := *p.url
	ping.Path, ping.RawQuery = "/livez/ping", ""
	return &Checker{
		cfg:    cfg,
		probe:  p,
		pinger: &probe{url: &ping, tls: p.tls, dialTCP: p.dialTCP}, // one TLS config: setRoots holds for both
		ready:  ready,
		tokens: newTokenSource(cfg.TokenPath, now),
		ca:     newCASource(cfg.CAFiles),
		log:    log,
		judge:  Judge{thr: thresholds{fail: cfg.FailThreshold, rise: cfg.RiseThreshold}},
		tune:   make(chan Timing, 1),
	}, nil
}

// shutdownFailed is how kube-apiserver's /readyz lists its failed shutdown
// check; its body lists every check when any fails, verbose or not.
var shutdownFailed = []byte("[-]shutdown failed")

// Check asks the apiserver and classifies its answer. With drain detection
// it asks /readyz first: 200 is healthy (readyz runs every livez check and
// more), a failed shutdown check is a drain, 401 and 403 are what /livez
// would answer too (authentication and RBAC treat both paths alike), and no
// answer is a failure as it would be for /livez (the one readyz check that
// can block, etcd-readiness, asks etcd as livez's etcd check does). Any
// other answer — readyz failing for etcd, informers — leaves the verdict to
// /livez. So a healthy apiserver costs one request per check, as before.
func (c *Checker) Check(ctx context.Context) Result {
	if !c.cfg.InsecureSkipVerify {
		c.useCA(c.ca.get())
	}
	tok := c.tokens.get()
	c.logTokenError(tok.err)
	// The token never goes over a connection whose certificate was not
	// verified: anyone can listen on the port while the apiserver is down.
	sendToken := c.probe.verifies() || c.cfg.InsecureSkipVerify
	if !sendToken {
		tok = token{err: tok.err}
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	start := time.Now()
	header := http.Header{"User-Agent": {"novaedge-cpvip"}}
	if tok.value != "" {
		header.Set("Authorization", "Bearer "+tok.value)
	}
	u := c.probe.url
	if c.ready != nil {
		u = c.ready
	}
	var pinged time.Duration
	var seen string // what Stalls saw of etcd
	var stalled bool
	sil := silence{}
	if c.cfg.HungAfter > 0 {
		if c.cfg.Stalls != nil {
			c.cfg.Stalls.Mark()
		}
		sil = silence{at: start.Add(c.cfg.HungAfter), stuck: func() bool {
			var ok, network bool
			if pinged, ok = c.answersPing(ctx); ok {
				network, seen = c.networkStall(ctx, pinged)
				stalled = stalled || network
			}
			return ok && !network
		}}
	}
	// The watch is on the verdict: /livez asked after a failed /readyz
	// shares its point in time.
	status, err := c.probe.getWatched(ctx, u, header, sil)
	if err == nil && u == c.ready {
		switch {
		case status == http.StatusInternalServerError && bytes.Contains(c.probe.body, shutdownFailed):
			return Result{Outcome: Drained, Status: status, Reason: "the apiserver is shutting down (/readyz: shutdown check failed)", Duration: time.Since(start)}
		case status != http.StatusOK && status != http.StatusUnauthorized && status != http.StatusForbidden:
			status, err = c.probe.getWatched(ctx, c.probe.url, header, sil)
		}
	}
	d := time.Since(start)
	if errors.Is(err, errStuck) {
		reason := fmt.Sprintf("no answer within %s while /livez/ping answered in %s: the apiserver runs but what the check waits for (etcd) does not",
			c.cfg.HungAfter, pinged.Round(time.Millisecond))
		if seen != "" {
			reason += " (" + seen + ")"
		}
		return Result{Outcome: Hung, Duration: d, Reason: reason}
	}
	if err != nil {
		reason := err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			reason = fmt.Sprintf("no answer within %s", c.cfg.Timeout)
		}
		out := Failed
		if refused(err) {
			out = Refused
		}
		return Result{Outcome: out, Reason: reason, Duration: d, Stalled: stalled}
	}
	ok, reason := classify(status, tok.present)
	return Result{Outcome: passed(ok), Status: status, Reason: reason, Duration: d, Stalled: stalled}
}

// refused reports whether err says no process serves the port: the
// connection was refused (nothing listens), or reset or closed before an
// answer. probe.get's error always comes from a new connection (a kept one
// that fails is replaced and asked again), and a live server never resets
// one: a full accept queue drops SYNs, a slow server times out. A process
// being killed keeps its listening socket while the kernel tears down its
// memory, accepts into its backlog, and resets those connections when the
// socket finally closes: that is a death, not a doubt.
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// classify applies the health rule: with a token only 200 is healthy; with no
// token file, 200 and 401 are (401 proves the server accepts connections).
func classify(status int, tokenPresent bool) (bool, string) {
	switch {
	case status == http.StatusOK:
		return true, ""
	case status == http.StatusUnauthorized && !tokenPresent:
		return true, ""
	case status == http.StatusUnauthorized:
		return false, "status 401 with a bearer token"
	default:
		return false, fmt.Sprintf("status %d", status)
	}
}

// useCA puts a new CA state into force (the kept connection, verified
// under the old one, is closed) and says so in the log.
func (c *Checker) useCA(st caState) {
	if !st.Changed {
		return
	}
	c.probe.setRoots(st.Pool)
	switch {
	case st.Err != nil:
		c.log.Error("Cannot use the cluster CA: checking the API server unverified and without the token", "error", st.Err.Error())
	case st.Pool == nil:
		c.log.Warn("No cluster CA yet: checking the API server unverified and without the token until one appears", "looked_for", c.cfg.CAFiles)
	default:
		c.log.Info("Verifying the API server's certificate", "ca_file", st.Path, "server_name", c.probe.tls.ServerName)
	}
}

func (c *Checker) logTokenError(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != c.lastErr && msg != "" {
		c.log.Error("Cannot read service-account token", "path", c.cfg.TokenPath, "error", msg)
	}
	c.lastErr = msg
}

// Run checks every Interval until ctx ends and sends each state change to out.
// The first check starts at once. After a failed check the next ones come
// every FastInterval until the thresholds decide; and a check runs at once
// when the apiserver closes the kept connection (its process died or is
// shutting down), after a transition in doubt (Judge.Closed) — so too when
// the close fails a check's request, which is tried again on a new
// connection. A new connection refused or reset decides at once, without
// the fail threshold: no process serves the port, which a slow or failing
// answer cannot tell. A check that outlasts the interval delays the next
// one: never two in flight.
func (c *Checker) Run(ctx context.Context, out chan<- Transition) {
	defer c.stop()
	doubt := func() {
		if tr, ok := c.judge.Closed(); ok {
			send(ctx, out, tr)
		}
	}
	// A close that fails a check's request is the same news as one seen
	// between checks: the try again on a new connection is that check.
	c.probe.closed = doubt
	defer func() { c.probe.closed = nil }()
	for {
		c.retune()
		start := time.Now()
		r := c.Check(ctx)
		if ctx.Err() != nil {
			return
		}
		c.observe(ctx, r, out)
		if c.probe.idle(ctx, start.Add(c.judge.Next(c.cfg.Interval, c.cfg.FastInterval))) {
			c.log.Debug("API server closed the kept connection, checking now")
			doubt()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func (c *Checker) observe(ctx context.Context, r Result, out chan<- Transition) {
	if c.OnResult != nil {
		c.OnResult(r)
	}
	prev := c.judge.State()
	tr, ok := c.judge.Observe(r)
	c.mu.Lock()
	c.stats.State, c.stats.Settled, c.stats.Last = c.judge.State(), c.judge.Settled(), r
	if r.OK() {
		c.stats.Success++
	} else {
		c.stats.Failure++
	}
	c.mu.Unlock()
	if !r.OK() && r.Outcome != Drained {
		lvl := slog.LevelDebug
		if prev == Healthy {
			lvl = slog.LevelWarn
		}
		c.log.Log(ctx, lvl, "Health check failed", "url", c.cfg.URL, "reason", r.Reason,
			"consecutive", c.judge.Failures(), "threshold", c.cfg.FailThreshold)
	}
	if ok {
		send(ctx, out, tr)
	}
}

// send hands tr to the election unless ctx ends first.
func send(ctx context.Context, out chan<- Transition, tr Transition) {
	select {
	case out <- tr:
	case <-ctx.Done():
	}
}
