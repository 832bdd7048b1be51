package lab

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Answer is what the stand-in apiserver's /livez does.
type Answer int

// The answers a test can switch between.
const (
	OK           Answer = iota // 200
	Unauthorized               // 401
	ServerError                // 500
	Hang                       // accept, never answer
	Down                       // nothing listens: connection refused
	TokenOnly                  // 200 only with the bearer token set by RequireToken, else 401
	Draining                   // a graceful shutdown's delay: /readyz 500 "[-]shutdown failed", the rest 200
)

// String names the answer.
func (a Answer) String() string {
	return [...]string{"200", "401", "500", "no answer", "down", "200 only with the token", "draining"}[a]
}

// APIServer is a stand-in kube-apiserver in a host's namespace: HTTPS on
// [::]:port (so the VIP reaches it too), /livez per the chosen answer,
// /whoami with the host's name. It records every Authorization header.
type APIServer struct {
	host *Host
	port int
	cert tls.Certificate

	mu     sync.Mutex
	answer Answer
	token  string
	auths  []string
	srv    *http.Server
}

// StartAPIServer starts a stand-in apiserver answering 200.
func (h *Host) StartAPIServer(port int) (*APIServer, error) {
	cert, err := selfSigned(h.Name)
	if err != nil {
		return nil, err
	}
	a := &APIServer{host: h, port: port, cert: cert}
	if err := a.listen(); err != nil {
		return nil, err
	}
	h.lab.mu.Lock()
	h.lab.stops = append(h.lab.stops, a.stop)
	h.lab.mu.Unlock()
	return a, nil
}

// WriteCert writes the stand-in's self-signed certificate (its own CA;
// names localhost, 127.0.0.1, ::1) as PEM to path, for NOVAEDGE_CP_VIP_CA_FILE.
func (a *APIServer) WriteCert(path string) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.cert.Certificate[0]}), 0o644)
}

func (a *APIServer) listen() error {
	var ln net.Listener
	err := InNetns(a.host.NS, func() error {
		var err error
		ln, err = net.Listen("tcp", ":"+strconv.Itoa(a.port))
		return err
	})
	if err != nil {
		return fmt.Errorf("apiserver in %s: %w", a.host.Name, err)
	}
	// The benchmarks' probes connect and close without TLS: no log for that.
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	a.srv = srv
	go func() { _ = srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{a.cert}})) }()
	return nil
}

func (a *APIServer) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.srv != nil {
		_ = a.srv.Close()
		a.srv = nil
	}
}

// Set switches the /livez answer. Down closes the listener; leaving Down opens it again.
func (a *APIServer) Set(ans Answer) error {
	a.mu.Lock()
	prev := a.answer
	a.answer = ans
	a.mu.Unlock()
	switch {
	case ans == Down && prev != Down:
		a.stop()
	case ans != Down && prev == Down:
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.listen()
	}
	return nil
}

// RequireToken makes /livez answer 200 only to "Bearer tok" (TokenOnly).
func (a *APIServer) RequireToken(tok string) error {
	a.mu.Lock()
	a.token = tok
	a.mu.Unlock()
	return a.Set(TokenOnly)
}

// Authorizations returns the Authorization headers /livez received, in order.
func (a *APIServer) Authorizations() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.auths...)
}

// ServeHTTP implements http.Handler.
func (a *APIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/whoami" {
		fmt.Fprint(w, a.host.Name)
		return
	}
	a.mu.Lock()
	ans, tok := a.answer, a.token
	a.auths = append(a.auths, r.Header.Get("Authorization"))
	a.mu.Unlock()
	switch ans {
	case OK:
		fmt.Fprint(w, "ok")
	case Unauthorized:
		w.WriteHeader(http.StatusUnauthorized)
	case TokenOnly:
		if r.Header.Get("Authorization") != "Bearer "+tok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "ok")
	case Hang:
		<-r.Context().Done()
	case Draining:
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "[+]ping ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n")
			return
		}
		fmt.Fprint(w, "ok")
	default:
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func selfSigned(name string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "kube-apiserver-" + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
