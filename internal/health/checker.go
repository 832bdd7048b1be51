package health

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"
)

// Config is what a Checker needs; cmd fills it from config.Config.
type Config struct {
	URL           string
	Interval      time.Duration
	Timeout       time.Duration
	FailThreshold int
	RiseThreshold int
	TokenPath     string
	CAFile        string // empty: skip certificate verification (loopback only)
}

// Result is the outcome of one check.
type Result struct {
	OK       bool
	Status   int    // HTTP status, 0 when no answer
	Reason   string // why it failed; empty when OK
	Duration time.Duration
}

// Transition is a change of State with the result that caused it.
type Transition struct {
	State State
	Last  Result
}

// Checker probes the apiserver's /livez. Run it in one goroutine: it issues
// one request at a time, so at most one is in flight.
type Checker struct {
	cfg     Config
	probe   *probe
	tokens  *tokenSource
	log     *slog.Logger
	thr     thresholds
	lastErr string
	// OnResult, if set, sees every result (for metrics). It must not block.
	OnResult func(Result)

	mu    sync.Mutex // guards stats, read by status
	stats Stats
}

// Stats is what status shows of the checks.
type Stats struct {
	State            State
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

// New builds a Checker. It fails if CAFile is set but unusable.
func New(cfg Config, log *slog.Logger, now func() time.Time) (*Checker, error) {
	tlsCfg := &tls.Config{InsecureSkipVerify: cfg.CAFile == "", MinVersion: tls.VersionTLS12} //nolint:gosec // loopback only, see CAFile
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	// Never through a proxy (the apiserver is local), no redirects followed,
	// one connection kept.
	p, err := newProbe(cfg.URL, tlsCfg)
	if err != nil {
		return nil, err
	}
	return &Checker{
		cfg:    cfg,
		probe:  p,
		tokens: newTokenSource(cfg.TokenPath, now),
		log:    log,
		thr:    thresholds{fail: cfg.FailThreshold, rise: cfg.RiseThreshold},
	}, nil
}

// Check performs one request and classifies its answer.
func (c *Checker) Check(ctx context.Context) Result {
	tok := c.tokens.get()
	c.logTokenError(tok.err)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	start := time.Now()
	header := http.Header{"User-Agent": {"novaedge-cpvip"}}
	if tok.value != "" {
		header.Set("Authorization", "Bearer "+tok.value)
	}
	status, err := c.probe.get(ctx, header)
	d := time.Since(start)
	if err != nil {
		reason := err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			reason = fmt.Sprintf("no answer within %s", c.cfg.Timeout)
		}
		return Result{Reason: reason, Duration: d}
	}
	ok, reason := classify(status, tok.present)
	return Result{OK: ok, Status: status, Reason: reason, Duration: d}
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
// The first check starts at once. A check that outlasts the interval delays
// the next one: never two in flight.
func (c *Checker) Run(ctx context.Context, out chan<- Transition) {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		r := c.Check(ctx)
		if ctx.Err() != nil {
			return
		}
		c.observe(ctx, r, out)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *Checker) observe(ctx context.Context, r Result, out chan<- Transition) {
	if c.OnResult != nil {
		c.OnResult(r)
	}
	prev := c.thr.state
	state, changed := c.thr.observe(r.OK)
	c.mu.Lock()
	c.stats.State, c.stats.Last = state, r
	if r.OK {
		c.stats.Success++
	} else {
		c.stats.Failure++
	}
	c.mu.Unlock()
	if !r.OK {
		lvl := slog.LevelDebug
		if prev == Healthy {
			lvl = slog.LevelWarn
		}
		c.log.Log(ctx, lvl, "Health check failed", "url", c.cfg.URL, "reason", r.Reason,
			"consecutive", c.thr.failRun, "threshold", c.cfg.FailThreshold)
	}
	if changed {
		select {
		case out <- Transition{State: state, Last: r}:
		case <-ctx.Done():
		}
	}
}
