package e2e

import (
	"testing"
	"time"
)

func TestOutageOf(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	// series builds probes 10 ms apart from t0: '+' connected, '-' failed.
	series := func(s string) []probe {
		var out []probe
		for i, c := range s {
			out = append(out, probe{at: t0.Add(time.Duration(i) * 10 * time.Millisecond), ok: c == '+'})
		}
		return out
	}
	ok := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = '+'
		}
		return string(b)
	}
	fault := t0.Add(50 * time.Millisecond)
	for _, tt := range []struct {
		name  string
		tries string
		want  time.Duration
		ok    bool
	}{
		{"one gap", "+++++---" + ok(60), 40 * time.Millisecond, true},
		{"lone success inside the outage", "+++++--+---" + ok(60), 70 * time.Millisecond, true},
		{"not recovered long enough", "+++++---" + ok(20), 0, false},
		{"no failure yet", ok(80), 0, false},
		{"failure before the fault does not count", "+-+++" + ok(80), 0, false},
		{"still failing", "+++++--------", 0, false},
	} {
		got, gotOK := outageOf(series(tt.tries), fault)
		if got != tt.want || gotOK != tt.ok {
			t.Errorf("%s: outageOf = %s, %v; want %s, %v", tt.name, got, gotOK, tt.want, tt.ok)
		}
	}
}
