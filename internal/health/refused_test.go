package health

import (
	"context"
	"net"
	"testing"
)

func TestThresholdsRefused(t *testing.T) {
	th := thresholds{fail: 3, rise: 1}
	th.observe(true)
	th.observe(false) // a doubtful failure counts
	if s, changed := th.refused(); s != Unhealthy || !changed {
		t.Fatalf("refused after healthy: %v %v", s, changed)
	}
	if _, changed := th.refused(); changed {
		t.Fatal("a second refusal is no change")
	}
	if s, _ := th.observe(true); s != Healthy {
		t.Fatalf("the restarted apiserver: %v", s)
	}
	fresh := thresholds{fail: 3, rise: 1}
	if s, changed := fresh.refused(); s != Unhealthy || !changed {
		t.Fatalf("refused at start: %v %v", s, changed)
	}
}

// A port nobody listens on is refused, and the check says so; a slow answer
// is not a refusal (TestCheckAgainstServer covers timeouts).
func TestCheckRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := newDrainChecker(t, "https://"+addr)
	r := c.Check(context.Background())
	if r.OK() || r.Outcome != Refused {
		t.Fatalf("closed port: %+v", r)
	}
	out := make(chan Transition, 1)
	c.observe(context.Background(), r, out)
	if tr := <-out; tr.State != Unhealthy {
		t.Fatalf("one refused check: %v, want unhealthy at once", tr.State)
	}
}

// A listener that resets every connection (a process being killed: its
// socket closes with connections in the backlog) is as certain as a
// refusal.
func TestCheckReset(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*net.TCPConn).SetLinger(0) // close with RST
			c.Close()
		}
	}()
	c := newDrainChecker(t, "https://"+l.Addr().String())
	if r := c.Check(context.Background()); r.OK() || r.Outcome != Refused {
		t.Fatalf("reset connection: %+v", r)
	}
}
