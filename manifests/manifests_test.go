// Package manifests holds the static pod manifests; its test parses them as
// Kubernetes Pods so they cannot rot.
package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/config"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestStaticPods(t *testing.T) {
	files, _ := filepath.Glob("*/novaedge-cpvip.yaml")
	if len(files) != 2 {
		t.Fatalf("manifests %v, want kubeadm and k3s", files)
	}
	known := map[string]bool{}
	for _, f := range config.Fields() {
		known[f.Env] = true
	}
	for _, path := range files {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var pod corev1.Pod
			if err := yaml.UnmarshalStrict(b, &pod); err != nil {
				t.Fatalf("not a strict Pod: %v", err)
			}
			if pod.Kind != "Pod" || pod.APIVersion != "v1" || !pod.Spec.HostNetwork || len(pod.Spec.Containers) != 1 {
				t.Fatalf("pod %s/%s: kind %s hostNetwork %v containers %d", pod.Namespace, pod.Name, pod.Kind, pod.Spec.HostNetwork, len(pod.Spec.Containers))
			}
			c := pod.Spec.Containers[0]
			sc := c.SecurityContext
			if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
				!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN", "NET_RAW"}) ||
				sc.Privileged != nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("capabilities must be exactly NET_ADMIN and NET_RAW, nothing else: %+v", sc)
			}
			for _, e := range c.Env {
				if !known[e.Name] {
					t.Errorf("unknown variable %s", e.Name)
				}
			}
			// The configuration passes check-config's validation.
			for _, e := range c.Env {
				t.Setenv(e.Name, e.Value)
			}
			if _, _, err := config.Load(nil); err != nil {
				t.Errorf("the manifest's configuration is invalid: %v", err)
			}
			if !strings.Contains(string(b), filepath.Dir(path)) && !strings.Contains(string(b), "pod-manifests") {
				t.Errorf("the manifest does not say where it goes")
			}
		})
	}
}
