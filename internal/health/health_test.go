package health

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		status  int
		token   bool
		healthy bool
	}{
		{200, true, true}, {200, false, true},
		{401, false, true}, {401, true, false},
		{403, false, false}, {500, false, false}, {500, true, false}, {302, false, false},
	}
	for _, tt := range tests {
		if got, _ := classify(tt.status, tt.token); got != tt.healthy {
			t.Errorf("classify(%d, token=%v) = %v, want %v", tt.status, tt.token, got, tt.healthy)
		}
	}
}

func TestThresholds(t *testing.T) {
	tests := []struct {
		name       string
		fail, rise int
		results    string // o = ok, x = failure
		want       []State
	}{
		{"rise 1", 3, 1, "o", []State{Healthy}},
		{"unknown until fail threshold", 3, 1, "xxx", []State{Unknown, Unknown, Unhealthy}},
		{"failure run broken", 3, 1, "oxxoxxx", []State{Healthy, Healthy, Healthy, Healthy, Healthy, Healthy, Unhealthy}},
		{"rise 2", 2, 2, "xxoxoo", []State{Unknown, Unhealthy, Unhealthy, Unhealthy, Unhealthy, Healthy}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := thresholds{fail: tt.fail, rise: tt.rise}
			for i, r := range tt.results {
				if got, _ := th.observe(r == 'o'); got != tt.want[i] {
					t.Fatalf("after %q: %v, want %v", tt.results[:i+1], got, tt.want[i])
				}
			}
		})
	}
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestTokenCacheAndRotation(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	reads := 0
	content, readErr := "tok-1\n", error(nil)
	id, statErr := fileID{ino: 1}, error(nil)
	s := newTokenSource("/t", clk.now)
	s.read = func(string) ([]byte, error) { reads++; return []byte(content), readErr }
	s.stat = func(string) (fileID, error) { return id, statErr }

	if tok := s.get(); tok.value != "tok-1" || !tok.present || tok.err != nil {
		t.Fatalf("first read: %+v", tok)
	}
	content = "tok-2" // rewritten in place with nothing stat sees changed
	clk.t = clk.t.Add(TokenTTL - time.Second)
	if tok := s.get(); tok.value != "tok-1" || reads != 1 {
		t.Fatalf("within TTL: %+v after %d reads, want cached tok-1", tok, reads)
	}
	clk.t = clk.t.Add(time.Second)
	if tok := s.get(); tok.value != "tok-2" || reads != 2 {
		t.Fatalf("after TTL: %+v after %d reads, want rotated tok-2", tok, reads)
	}
	// Replaced (another inode, as kubelet's symlink swap or a rename does):
	// read at the next check, long before the TTL.
	content, id = "tok-r", fileID{ino: 2}
	clk.t = clk.t.Add(time.Second)
	if tok := s.get(); tok.value != "tok-r" || reads != 3 {
		t.Fatalf("replaced file: %+v after %d reads, want tok-r read at once", tok, reads)
	}
	if tok := s.get(); tok.value != "tok-r" || reads != 3 {
		t.Fatalf("unchanged file: %+v after %d reads, want no read", tok, reads)
	}
	// Unreadable: an error, still "present" (only 200 healthy), last good value kept, re-read next time.
	clk.t = clk.t.Add(TokenTTL)
	readErr = fs.ErrPermission
	if tok := s.get(); !tok.present || tok.err == nil || tok.value != "tok-r" {
		t.Fatalf("unreadable: %+v", tok)
	}
	readErr = nil
	content = "tok-3"
	if tok := s.get(); tok.value != "tok-3" || tok.err != nil {
		t.Fatalf("readable again: %+v", tok)
	}
	// Absent: no token, and the file is seen at once when it appears.
	statErr = fs.ErrNotExist
	if tok := s.get(); tok.present || tok.value != "" {
		t.Fatalf("absent: %+v", tok)
	}
	statErr, content, id = nil, "tok-4", fileID{ino: 3}
	if tok := s.get(); tok.value != "tok-4" {
		t.Fatalf("a token file that appears must be read at the next check: %+v", tok)
	}
	// A clock that jumps back does not pin the cache forever.
	content = "tok-5"
	clk.t = clk.t.Add(-time.Hour)
	if tok := s.get(); tok.value != "tok-5" {
		t.Fatalf("after a backward clock jump the file must be read again: %+v", tok)
	}
}

// apiserver is a stand-in /livez with a switchable answer.
type apiserver struct {
	status atomic.Int32
	hang   atomic.Bool
	mu     sync.Mutex
	auth   []string
}

func (a *apiserver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.auth = append(a.auth, r.Header.Get("Authorization"))
	a.mu.Unlock()
	if a.hang.Load() {
		<-r.Context().Done()
		return
	}
	w.WriteHeader(int(a.status.Load()))
}

func newChecker(t *testing.T, url, tokenPath, caFile string) *Checker {
	t.Helper()
	var cas []string
	if caFile != "" {
		cas = []string{caFile}
	}
	c, err := New(Config{URL: url, Interval: 10 * time.Millisecond, Timeout: 200 * time.Millisecond,
		FailThreshold: 2, RiseThreshold: 1, TokenPath: tokenPath, CAFiles: cas},
		slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCheckAgainstServer(t *testing.T) {
	api := &apiserver{}
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	tokenPath := filepath.Join(dir, "token")
	ctx := context.Background()

	noToken := newChecker(t, srv.URL+"/livez", filepath.Join(dir, "absent"), "")
	for status, want := range map[int32]bool{200: true, 401: true, 500: false, 403: false} {
		api.status.Store(status)
		if r := noToken.Check(ctx); r.OK() != want || r.Status != int(status) {
			t.Errorf("no token, status %d: %+v, want ok=%v", status, r, want)
		}
	}

	if err := os.WriteFile(tokenPath, []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	withToken := newChecker(t, srv.URL+"/livez", tokenPath, caFile)
	api.status.Store(401)
	if r := withToken.Check(ctx); r.OK() {
		t.Errorf("token, 401: %+v, want failure", r)
	}
	api.status.Store(200)
	if r := withToken.Check(ctx); !r.OK() {
		t.Errorf("token, 200: %+v", r)
	}
	api.mu.Lock()
	last := api.auth[len(api.auth)-1]
	api.mu.Unlock()
	if last != "Bearer secret-token" {
		t.Errorf("Authorization = %q", last)
	}

	api.hang.Store(true)
	start := time.Now()
	if r := withToken.Check(ctx); r.OK() || r.Reason != "no answer within 200ms" {
		t.Errorf("hanging server: %+v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("hanging check took %s", d)
	}
	api.hang.Store(false)

	down := httptest.NewTLSServer(api)
	url := down.URL
	down.Close()
	if r := newChecker(t, url+"/livez", tokenPath, caFile).Check(ctx); r.OK() || r.Status != 0 {
		t.Errorf("refused: %+v", r)
	}
}

// TestTokenNeverSentUnverified: with a token file but no CA to verify the
// apiserver with (before bootstrap, or a listener squatting on the port),
// the check sends no token and applies the rules of no token; a listener
// whose certificate the CA does not verify gets no request at all; only
// the explicit switch sends the token blind.
func TestTokenNeverSentUnverified(t *testing.T) {
	api := &apiserver{}
	squatter := httptest.NewTLSServer(api) // self-signed, not the cluster CA's
	t.Cleanup(squatter.Close)
	dir := t.TempDir()
	tokenPath := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenPath, []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	auths := func() []string { api.mu.Lock(); defer api.mu.Unlock(); return append([]string(nil), api.auth...) }

	api.status.Store(401)
	noCA := newChecker(t, squatter.URL+"/livez", tokenPath, filepath.Join(dir, "absent-ca.crt"))
	if r := noCA.Check(ctx); !r.OK() {
		t.Errorf("no CA yet, 401: %+v, want healthy by the rules of no token", r)
	}
	if a := auths(); len(a) != 1 || a[0] != "" {
		t.Errorf("no CA yet: Authorization headers %q, want none", a)
	}

	// A CA that exists but did not sign the squatter's certificate.
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: selfSigned(t).Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	api.status.Store(200)
	verifying := newChecker(t, squatter.URL+"/livez", tokenPath, caFile)
	if r := verifying.Check(ctx); r.OK() {
		t.Errorf("squatter with a certificate the CA does not verify: %+v, want a failure", r)
	}
	if a := auths(); len(a) != 1 {
		t.Errorf("the squatter got %d requests, want none beyond the first", len(a)-1)
	}

	insecure, err := New(Config{URL: squatter.URL + "/livez", Interval: 10 * time.Millisecond, Timeout: 200 * time.Millisecond,
		FailThreshold: 2, RiseThreshold: 1, TokenPath: tokenPath, CAFiles: []string{caFile}, InsecureSkipVerify: true},
		slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if r := insecure.Check(ctx); !r.OK() {
		t.Errorf("insecure: %+v", r)
	}
	if a := auths(); a[len(a)-1] != "Bearer secret-token" {
		t.Errorf("insecure: Authorization %q, want the token", a[len(a)-1])
	}
}

func TestCAVerification(t *testing.T) {
	api := &apiserver{}
	api.status.Store(200)
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	good := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(good, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := newChecker(t, srv.URL+"/livez", "/nonexistent", good).Check(context.Background()); !r.OK() {
		t.Errorf("matching CA: %+v", r)
	}
	other := httptest.NewUnstartedServer(api) // another certificate: verification must fail
	other.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	other.StartTLS()
	t.Cleanup(other.Close)
	if r := newChecker(t, other.URL+"/livez", "/nonexistent", good).Check(context.Background()); r.OK() {
		t.Errorf("foreign certificate accepted: %+v", r)
	}
	// An unusable CA file verifies nothing: the check runs as before
	// bootstrap (and the log says why) rather than failing a healthy node.
	bad := filepath.Join(dir, "bad.pem")
	_ = os.WriteFile(bad, []byte("not pem"), 0o600)
	c := newChecker(t, other.URL+"/livez", "/nonexistent", bad)
	if st := c.ca.get(); st.Pool != nil || st.Err == nil {
		t.Errorf("CA file without certificates: %+v", st)
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// healthyServer is a stand-in apiserver answering 200, and a checker of it
// without a token.
func healthyServer(t *testing.T) (*apiserver, *Checker) {
	t.Helper()
	api := &apiserver{}
	api.status.Store(200)
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	return api, newChecker(t, srv.URL+"/livez", "/nonexistent", "")
}

// wantTransition waits for the next transition from out and checks it is
// to s, skipping changes of Settled alone.
func wantTransition(t *testing.T, out <-chan Transition, s State) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case tr := <-out:
			if !tr.Changed {
				continue
			}
			if tr.State != s {
				t.Fatalf("transition to %v, want %v", tr.State, s)
			}
			return
		case <-deadline:
			t.Fatalf("no transition to %v", s)
		}
	}
}

func TestRunEmitsTransitions(t *testing.T) {
	api, c := healthyServer(t)
	var mu sync.Mutex
	results := 0
	c.OnResult = func(Result) { mu.Lock(); results++; mu.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan Transition)
	done := make(chan struct{})
	go func() { c.Run(ctx, out); close(done) }()

	want := func(s State) { t.Helper(); wantTransition(t, out, s) }
	want(Healthy)
	api.status.Store(500)
	want(Unhealthy)
	api.status.Store(200)
	want(Healthy)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	mu.Lock()
	defer mu.Unlock()
	if results < 4 {
		t.Errorf("OnResult saw %d results", results)
	}
}

func TestUnreadableTokenLogsWithoutToken(t *testing.T) {
	if os.Geteuid() == 0 {
		// root reads any file: simulate the permission error instead.
		s := newTokenSource("/t", time.Now)
		s.read = func(string) ([]byte, error) { return nil, fs.ErrPermission }
		s.stat = func(string) (fileID, error) { return fileID{ino: 1}, nil }
		if tok := s.get(); !tok.present || !errors.Is(tok.err, fs.ErrPermission) {
			t.Fatalf("%+v", tok)
		}
		return
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	_ = os.WriteFile(p, []byte("x"), 0)
	if tok := newTokenSource(p, time.Now).get(); !tok.present || tok.err == nil {
		t.Fatalf("%+v", tok)
	}
}

// TestOneKeptConnection: checks reuse one connection; a server that closes
// it (after every answer, or while it sat idle) costs a new connection, not
// a failed check; a cancelled check returns at once.
func TestOneKeptConnection(t *testing.T) {
	api := &apiserver{}
	api.status.Store(200)
	srv := httptest.NewUnstartedServer(api)
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := newChecker(t, srv.URL+"/livez", "/nonexistent", "")
	ctx := context.Background()
	check := func(what string) {
		t.Helper()
		if r := c.Check(ctx); !r.OK() {
			t.Fatalf("%s: %+v", what, r)
		}
	}
	for range 5 {
		check("kept connection")
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 checks opened %d connections, want 1", n)
	}
	srv.CloseClientConnections() // the server drops the idle connection
	check("after the server closed the idle connection")
	srv.Config.SetKeepAlivesEnabled(false) // Connection: close on every answer
	for range 3 {
		check("server closing after each answer")
	}
	if n := conns.Load(); n != 5 {
		t.Errorf("%d connections, want 5 (1 + 1 after the drop + 3 without keep-alive)", n)
	}

	api.hang.Store(true)
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	if r := c.Check(cctx); r.OK() || r.Reason != "context canceled" {
		t.Errorf("cancelled check: %+v", r)
	}
	api.hang.Store(false)
	check("after a cancelled check")
}

// TestSettled: a node is settled once healthy with its latest
// max(RISE_THRESHOLD, SettleRun) checks passed; one failed check unsettles
// it without changing its state; an unhealthy, draining or unknown node is
// never settled.
func TestSettled(t *testing.T) {
	for _, rise := range []int{1, 2, 3} {
		th := &thresholds{fail: 3, rise: rise}
		want := max(rise, SettleRun)
		for k := 1; k <= want; k++ {
			th.judge(Result{Outcome: Passed})
			if got := th.settled(); got != (k >= want) {
				t.Errorf("rise %d: after %d passed checks settled %v", rise, k, got)
			}
		}
		if st, changed := th.judge(Result{}); st != Healthy || changed || th.settled() {
			t.Errorf("rise %d: one failed check: %v changed %v settled %v, want healthy, unchanged, unsettled", rise, st, changed, th.settled())
		}
		for range want {
			th.judge(Result{Outcome: Passed})
		}
		if !th.settled() {
			t.Errorf("rise %d: not settled again after %d passed checks", rise, want)
		}
		if th.judge(Result{Outcome: Refused}); th.settled() {
			t.Errorf("rise %d: settled while unhealthy", rise)
		}
		if th.judge(Result{Outcome: Drained}); th.settled() {
			t.Errorf("rise %d: settled while draining", rise)
		}
	}
	if (&thresholds{fail: 3, rise: 1}).settled() {
		t.Error("settled before any check")
	}
	// A pass that came after a stall blamed on the network counts towards
	// health, not towards settling (nor against it).
	th := &thresholds{fail: 3, rise: 1}
	th.judge(Result{})
	if st, _ := th.judge(Result{Outcome: Passed, Stalled: true}); st != Healthy || th.settled() {
		t.Errorf("a pass after a stall: %v settled %v, want healthy, unsettled", st, th.settled())
	}
	if th.judge(Result{Outcome: Passed}); th.settled() {
		t.Error("one pass after the stalled one: settled")
	}
	if th.judge(Result{Outcome: Passed, Stalled: true}); th.settled() {
		t.Error("a stalled pass counted")
	}
	if th.judge(Result{Outcome: Passed}); !th.settled() {
		t.Error("two steady passes, a stalled one between: not settled")
	}
}
