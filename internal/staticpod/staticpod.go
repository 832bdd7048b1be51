// Package staticpod renders novaedge-cpvip's static pod for kubeadm and k3s
// from a configuration: what `novaedge-cpvip manifest pod` prints and
// manifests/ holds. The pod carries the given variables in its env, except
// secrets, which it reads from a file on the host: a static pod's mirror
// pod, env included, is readable through the Kubernetes API.
package staticpod

import (
	"bytes"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"text/template"

	"github.com/novaedge/cpvip/internal/config"
)

// Flavour is the tool that runs the control plane.
type Flavour struct {
	Name        string
	ManifestDir string // where the kubelet reads static pods
	CAFile      string // the cluster CA that signed the apiserver's serving certificate
	Bootstrap   string // the command the pod must be in place before
}

// Flavours are kubeadm's and k3s's layouts.
var Flavours = map[string]Flavour{
	"kubeadm": {Name: "kubeadm", ManifestDir: "/etc/kubernetes/manifests", CAFile: config.KubeadmCAFile,
		Bootstrap: "`kubeadm init --control-plane-endpoint VIP:6443` and `kubeadm join --control-plane`"},
	"k3s": {Name: "k3s", ManifestDir: "/var/lib/rancher/k3s/agent/pod-manifests", CAFile: config.K3sCAFile,
		Bootstrap: "`k3s server --tls-san VIP`"},
}

// DefaultSecretsFile is where the pod reads secret variables from, on the host.
const DefaultSecretsFile = "/etc/novaedge/cpvip-secrets.env"

// UID is the user and group the pod runs as: an id of our own, which no
// other process on the node has (not nobody's 65534, which every other
// process running as nobody shares: any of them with the host's file
// system could read the secrets file owned by it). From the range Debian
// leaves to be allocated on demand (60000-64999).
const UID = 64443

// Options say what to render.
type Options struct {
	Flavour     Flavour
	Image       string
	Vars        map[string]string // the configuration given (config.Given)
	SecretsFile string            // host file for secret variables; DefaultSecretsFile if empty
}

// Pod is a rendered manifest.
type Pod struct {
	YAML    []byte
	Secrets []string // variables left out of env: they belong in SecretsFile
	Path    string   // where the manifest goes on each node
}

type env struct{ Name, Value string }

const metricsVar = "NOVAEDGE_CP_VIP_METRICS_ADDR"

// PodMetricsAddr is the static pod's metrics address when the
// configuration sets none: every address of the node (the pod is on the
// host's network), so that a cluster's Prometheus scrapes it at the pod's
// IP, the node's, as the PodMonitor does. The package keeps the daemon's
// loopback default. What the port serves beyond loopback reveals no secret
// (docs/monitoring.md): /status answers loopback clients only.
const PodMetricsAddr = ":9450"

type probe struct {
	Host string
	Port int
	// Exposed: the metrics listen beyond loopback, so the pod declares its
	// named port (the PodMonitor's target).
	Exposed bool
}

type data struct {
	Flavour     Flavour
	Image       string
	Env         []env
	Secrets     []string
	SecretsFile string
	CAFile      string
	Probe       *probe
	UID         int
}

// Render builds the pod. Variables come in the order of the configuration
// reference, so the same configuration always gives the same bytes.
func Render(o Options) (Pod, error) {
	d := data{Flavour: o.Flavour, Image: o.Image, SecretsFile: o.SecretsFile, CAFile: o.Flavour.CAFile, UID: UID}
	if d.SecretsFile == "" {
		d.SecretsFile = DefaultSecretsFile
	}
	if o.Image == "" || strings.ContainsAny(o.Image, " \t\n\"") {
		return Pod{}, fmt.Errorf("image %q: want a reference like ghcr.io/novaedge/cpvip:v0.1.0", o.Image)
	}
	vars := maps.Clone(o.Vars)
	if vars == nil {
		vars = map[string]string{}
	}
	if _, set := vars[metricsVar]; !set {
		vars[metricsVar] = PodMetricsAddr
	}
	for _, f := range config.Fields() {
		v, ok := vars[f.Env]
		if !ok {
			continue
		}
		if config.IsSecret(f.Env, v) {
			d.Secrets = append(d.Secrets, f.Env)
			continue
		}
		d.Env = append(d.Env, env{f.Env, strconv.Quote(v)})
	}
	if ca := o.Vars["NOVAEDGE_CP_VIP_CA_FILE"]; ca != "" {
		d.CAFile = ca
	}
	if metrics := vars[metricsVar]; metrics != "" {
		reach, port, err := config.LocalReach(metrics)
		if err != nil {
			return Pod{}, fmt.Errorf("%s: %w", metricsVar, err)
		}
		host, _, _ := net.SplitHostPort(reach)
		d.Probe = &probe{Host: host, Port: port, Exposed: !config.IsLoopbackListen(metrics)}
	}
	var b bytes.Buffer
	if err := podTemplate.Execute(&b, d); err != nil {
		return Pod{}, err
	}
	return Pod{YAML: b.Bytes(), Secrets: d.Secrets, Path: o.Flavour.ManifestDir + "/novaedge-cpvip.yaml"}, nil
}

var podTemplate = template.Must(template.New("pod").Parse(`# novaedge-cpvip as a {{.Flavour.Name}} static pod, written by ` + "`novaedge-cpvip manifest pod`" + `.
# The same file goes to {{.Flavour.ManifestDir}}/novaedge-cpvip.yaml on every
# control-plane node before {{.Flavour.Bootstrap}}
# (docs/{{.Flavour.Name}}.md). It needs no Kubernetes API. It verifies the local apiserver
# against the cluster CA {{.CAFile}}, mounted read-only.
{{- if .Secrets}}
# Secrets never go in a pod's env (the mirror pod is readable through the API):
# {{range $i, $s := .Secrets}}{{if $i}}, {{end}}{{$s}}{{end}} must be in {{.SecretsFile}}
# on every node (KEY=VALUE lines, mode 0600, owned by {{.UID}}, the pod's own user:
# chown {{.UID}}:{{.UID}} {{.SecretsFile}}), which the pod reads.
{{- end}}
apiVersion: v1
kind: Pod
metadata:
  name: novaedge-cpvip
  namespace: kube-system
  labels:
    app.kubernetes.io/name: novaedge-cpvip
    app.kubernetes.io/component: control-plane-vip
spec:
  hostNetwork: true
  priorityClassName: system-node-critical
  terminationGracePeriodSeconds: 10
  tolerations:
    - operator: Exists
  securityContext:
    seccompProfile:
      type: RuntimeDefault
    # An id of our own, not nobody's: the secrets file is readable by it
    # alone. The binary in the image carries CAP_NET_ADMIN and CAP_NET_RAW
    # as file capabilities, the only way a runtime gives them to a non-root
    # process.
    runAsNonRoot: true
    runAsUser: {{.UID}}
    runAsGroup: {{.UID}}
  containers:
    - name: novaedge-cpvip
      image: {{.Image}}
      imagePullPolicy: IfNotPresent
      args: ["run"{{if .Secrets}}, "--env-file", "{{.SecretsFile}}"{{end}}]
      env:
{{- range .Env}}
        - name: {{.Name}}
          value: {{.Value}}
{{- end}}
      securityContext:
        # true: with no_new_privs the kernel ignores file capabilities. Safe
        # here: the image holds only our binary, no setuid file, the root
        # filesystem is read-only and the bounding set is the two below.
        allowPrivilegeEscalation: true
        readOnlyRootFilesystem: true
        capabilities:
          drop: ["ALL"]
          add: ["NET_ADMIN", "NET_RAW"]
      volumeMounts:
        - name: cluster-ca
          mountPath: {{.CAFile}}
          readOnly: true
{{- if .Secrets}}
        - name: secrets
          mountPath: {{.SecretsFile}}
          readOnly: true
{{- end}}
{{- if .Probe}}
{{- if .Probe.Exposed}}
      ports:
        - name: metrics
          containerPort: {{.Probe.Port}}
          protocol: TCP
{{- end}}
      livenessProbe:
        httpGet:
          host: {{.Probe.Host}}
          port: {{.Probe.Port}}
          path: /healthz
        periodSeconds: 10
        failureThreshold: 3
      readinessProbe:
        httpGet:
          host: {{.Probe.Host}}
          port: {{.Probe.Port}}
          path: /readyz
        periodSeconds: 5
{{- end}}
      resources:
        requests:
          cpu: 10m
          memory: 32Mi
        limits:
          memory: 96Mi
  volumes:
    - name: cluster-ca
      hostPath:
        path: {{.CAFile}}
        type: File
{{- if .Secrets}}
    - name: secrets
      hostPath:
        path: {{.SecretsFile}}
        type: File
{{- end}}
`))
