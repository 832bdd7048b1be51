package kubevip

import (
	"os"
	"strings"
	"testing"
)

func TestExplainsLostAndGainedFeaturesAndSteps(t *testing.T) {
	data, err := os.ReadFile("testdata/arp-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lb := strings.Replace(string(data), "- name: cp_enable", "- name: lb_enable\n      value: \"true\"\n    - name: cp_enable", 1)
	r, err := Convert([]byte(lb))
	if err != nil {
		t.Fatal(err)
	}
	out := r.Explanation()
	for _, want := range []string{"you lose: lb_enable", "you lose: svc_enable", "you lose: vip_leaderelection with cp_enable",
		"you gain: the election needs no Kubernetes API", "the leader last", "plndr-cp-lock"} {
		if !strings.Contains(out, want) {
			t.Errorf("explanation lacks %q:\n%s", want, out)
		}
	}
	data, err = os.ReadFile("testdata/bgp-daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r, err = Convert(data); err != nil {
		t.Fatal(err)
	}
	out = r.Explanation()
	for _, want := range []string{"node affinity", "show ip bgp", "one session per neighbour address"} {
		if !strings.Contains(out, want) {
			t.Errorf("BGP DaemonSet explanation lacks %q:\n%s", want, out)
		}
	}
}
