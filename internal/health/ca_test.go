package health

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// kubeadmPKI makes a CA and a serving certificate shaped like kubeadm's:
// the node name, kubernetes, kubernetes.default…, the first service IP and
// the advertise address — no localhost, no 127.0.0.1. It returns the
// server's certificate and the CA in PEM.
func kubeadmPKI(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames:    []string{"n1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("203.0.113.1"), net.ParseIP("192.0.2.11")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

func kubeadmServer(t *testing.T, cert tls.Certificate) *httptest.Server {
	t.Helper()
	api := &apiserver{}
	api.status.Store(200)
	srv := httptest.NewUnstartedServer(api)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func checkerFor(t *testing.T, url, serverName string, cas ...string) *Checker {
	t.Helper()
	c, err := New(Config{URL: url, Interval: 10 * time.Millisecond, Timeout: time.Second, FailThreshold: 1, RiseThreshold: 1,
		TokenPath: "/nonexistent", CAFiles: cas, ServerName: serverName}, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestVerifiesKubeadmCertificate: the check reaches the apiserver at
// localhost and verifies the name kubernetes, which kubeadm's serving
// certificate carries; the name localhost would fail (today's bug).
func TestVerifiesKubeadmCertificate(t *testing.T) {
	cert, caPEM := kubeadmPKI(t)
	srv := kubeadmServer(t, cert)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := checkerFor(t, srv.URL+"/livez", "kubernetes", ca).Check(context.Background()); !r.OK() {
		t.Errorf("kubeadm-shaped certificate with server name kubernetes: %+v", r)
	}
	if r := checkerFor(t, srv.URL+"/livez", "localhost", ca).Check(context.Background()); r.OK() {
		t.Errorf("server name localhost verified against a certificate without it: %+v", r)
	}
}

// TestCAAppearsAfterStart: before bootstrap there is no CA and the check
// runs unverified; once the file appears (kubeadm init writes it) the next
// check verifies, and a CA that does not sign the server fails it.
func TestCAAppearsAfterStart(t *testing.T) {
	cert, caPEM := kubeadmPKI(t)
	srv := kubeadmServer(t, cert)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	c := checkerFor(t, srv.URL+"/livez", "kubernetes", filepath.Join(dir, "other.crt"), ca)
	if r := c.Check(context.Background()); !r.OK() || c.probe.tls.RootCAs != nil {
		t.Fatalf("no CA yet: %+v", r)
	}
	if err := os.WriteFile(ca, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := c.Check(context.Background()); !r.OK() || c.probe.tls.RootCAs == nil {
		t.Fatalf("CA appeared: %+v, verifying %v", r, c.probe.tls.RootCAs != nil)
	}
	_, otherPEM := kubeadmPKI(t) // a CA that did not sign the server, first in the list
	if err := os.WriteFile(filepath.Join(dir, "other.crt"), otherPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := c.Check(context.Background()); r.OK() {
		t.Fatalf("a server the CA in force did not sign passed: %+v", r)
	}
}
