// Command kclient is the lab's real Kubernetes client, built on client-go.
//
//	kclient probe  -server URL -token T -ca FILE [-every 10ms] [-for 20s] [-rv0]
//	    sends GET /api/v1/namespaces/kube-system (or, with -rv0, a list of
//	    namespaces with resourceVersion=0, served from the watch cache) over a
//	    fresh TCP+TLS connection every interval, one attempt each (no
//	    client-go retry), and writes one line per
//	    request: "UNIXMILLI ok|fail LATENCY_MS [error]". It stops after -for,
//	    or on SIGTERM/SIGINT.
//	kclient token  -server URL -token T -ca FILE -ns NS -sa NAME [-ttl 1h]
//	    creates the ServiceAccount if missing, asks the TokenRequest API for a
//	    token and prints it.
//	kclient delete-sa -server URL -token T -ca FILE -ns NS -sa NAME
//	    deletes the ServiceAccount (its tokens stop working).
//	kclient pods -kubeconfig FILE [-ns NS]
//	    lists the namespace's pods: "NAME PHASE READY NODE" a line.
//	kclient nodes -kubeconfig FILE
//	    lists the nodes: "NAME READY" a line (the kubelet's Ready condition).
//
// Instead of -token and -ca, -kubeconfig FILE (kubeadm's admin.conf) gives
// the credentials and the CA; -server, if set, overrides its server.
//
// Test use only: the token given with -token is the lab's bootstrap admin.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"
)

type options struct {
	server, token, ca, ns, sa string
	kubeconfig                string
	every, dur, ttl, timeout  time.Duration
	rv0, keep                 bool
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kclient probe|token|delete-sa [flags]")
		os.Exit(2)
	}
	var o options
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	fs.StringVar(&o.server, "server", "", "apiserver URL, https://VIP:6443")
	fs.StringVar(&o.token, "token", "", "bearer token")
	fs.StringVar(&o.ca, "ca", "", "CA certificate file")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (instead of -token and -ca)")
	fs.StringVar(&o.ns, "ns", "kube-system", "namespace of the ServiceAccount")
	fs.StringVar(&o.sa, "sa", "", "ServiceAccount name")
	fs.DurationVar(&o.every, "every", 10*time.Millisecond, "probe: interval between requests")
	fs.DurationVar(&o.dur, "for", 20*time.Second, "probe: how long to run")
	fs.DurationVar(&o.timeout, "timeout", time.Second, "per request")
	fs.DurationVar(&o.ttl, "ttl", time.Hour, "token: requested lifetime")
	fs.BoolVar(&o.rv0, "rv0", false, "probe: list namespaces with resourceVersion=0 (watch cache)")
	fs.BoolVar(&o.keep, "keep", false, "keep the connection between requests (HTTP keep-alive), as client-go does")
	_ = fs.Parse(os.Args[2:])

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cs, err := clientset(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kclient:", err)
		os.Exit(1)
	}
	switch os.Args[1] {
	case "probe":
		err = probe(ctx, cs, o)
	case "token":
		err = token(ctx, cs, o)
	case "delete-sa":
		err = cs.CoreV1().ServiceAccounts(o.ns).Delete(ctx, o.sa, metav1.DeleteOptions{})
	case "pods":
		err = pods(ctx, cs, o)
	case "nodes":
		err = nodes(ctx, cs)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kclient:", err)
		os.Exit(1)
	}
}

// clientset builds a client whose every request opens a fresh TCP+TLS
// connection (no keep-alive), so each one crosses the VIP anew.
func clientset(o options) (*kubernetes.Clientset, error) {
	if o.kubeconfig != "" {
		return clientsetFromKubeconfig(o)
	}
	pem, err := os.ReadFile(o.ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", o.ca)
	}
	var rt http.RoundTripper = &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: !o.keep,
	}
	rt = transport.NewBearerAuthRoundTripper(o.token, rt)
	return kubernetes.NewForConfigAndClient(&rest.Config{Host: o.server, QPS: -1},
		&http.Client{Transport: rt, Timeout: o.timeout})
}

func probe(ctx context.Context, cs *kubernetes.Clientset, o options) error {
	ctx, cancel := context.WithTimeout(ctx, o.dur)
	defer cancel()
	t := time.NewTicker(o.every)
	defer t.Stop()
	for {
		start := time.Now()
		// One attempt per request: client-go would retry a reset connection
		// a second later and hide the failure.
		req := cs.CoreV1().RESTClient().Get().Resource("namespaces").MaxRetries(0)
		if o.rv0 {
			req = req.Param("resourceVersion", "0")
		} else {
			req = req.Name("kube-system")
		}
		err := req.Do(ctx).Error()
		if ctx.Err() != nil {
			return nil
		}
		lat := float64(time.Since(start).Microseconds()) / 1000
		if err != nil {
			fmt.Printf("%d fail %.3f %v\n", start.UnixMilli(), lat, err)
		} else {
			fmt.Printf("%d ok %.3f\n", start.UnixMilli(), lat)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func token(ctx context.Context, cs *kubernetes.Clientset, o options) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: o.sa, Namespace: o.ns}}
	if _, err := cs.CoreV1().ServiceAccounts(o.ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	secs := int64(o.ttl.Seconds())
	tr, err := cs.CoreV1().ServiceAccounts(o.ns).CreateToken(ctx, o.sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	fmt.Println(tr.Status.Token)
	return nil
}

// clientsetFromKubeconfig is clientset with the kubeconfig's credentials.
func clientsetFromKubeconfig(o options) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags(o.server, o.kubeconfig)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	rt := &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: !o.keep}
	return kubernetes.NewForConfigAndClient(&rest.Config{Host: cfg.Host, QPS: -1},
		&http.Client{Transport: rt, Timeout: o.timeout})
}

func pods(ctx context.Context, cs *kubernetes.Clientset, o options) error {
	list, err := cs.CoreV1().Pods(o.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range list.Items {
		ready := "false"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = "true"
			}
		}
		fmt.Println(p.Name, p.Status.Phase, ready, p.Spec.NodeName)
	}
	return nil
}

func nodes(ctx context.Context, cs *kubernetes.Clientset) error {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, n := range list.Items {
		ready := "false"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = "true"
			}
		}
		fmt.Println(n.Name, ready)
	}
	return nil
}
