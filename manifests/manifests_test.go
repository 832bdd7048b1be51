package manifests

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/staticpod"
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
				sc.Privileged != nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("capabilities must be exactly NET_ADMIN and NET_RAW, nothing else, the root read-only: %+v", sc)
			}
			// Privilege escalation stays allowed: no_new_privs would make the
			// kernel ignore the binary's file capabilities (non-root).
			if sc.AllowPrivilegeEscalation == nil || !*sc.AllowPrivilegeEscalation {
				t.Errorf("allowPrivilegeEscalation must be true for the file capabilities of a non-root process")
			}
			psc := pod.Spec.SecurityContext
			if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Fatalf("seccompProfile must be RuntimeDefault")
			}
			if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
				t.Errorf("the pod must run as a non-root user")
			}
			for _, e := range c.Env {
				if config.IsSecret(e.Name, e.Value) {
					t.Errorf("secret %s in the pod's env", e.Name)
				}
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

var update = flag.Bool("update", false, "rewrite the manifests from the generator")

// exampleVars is the configuration the shipped manifests show: what
// `novaedge-cpvip manifest pod --flavour F --image ghcr.io/novaedge/cpvip:v0.1.0
// --vip-address 192.0.2.100/32 --mode l2 --vrid 51` prints.
var exampleVars = map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_MODE": "l2", "NOVAEDGE_CP_VIP_VRID": "51"}

// TestGenerated fails when a manifest differs from what the generator
// prints for its configuration (go test ./manifests -update rewrites them).
func TestGenerated(t *testing.T) {
	if _, err := config.LoadMap(exampleVars); err != nil {
		t.Fatal(err)
	}
	for name, fv := range staticpod.Flavours {
		path := filepath.Join(name, "novaedge-cpvip.yaml")
		pod, err := staticpod.Render(staticpod.Options{Flavour: fv, Image: "ghcr.io/novaedge/cpvip:v0.1.0", Vars: exampleVars})
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(path, pod.YAML, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, pod.YAML) {
			t.Errorf("%s differs from `novaedge-cpvip manifest pod --flavour %s`: run go test ./manifests -update", path, name)
		}
	}
}
