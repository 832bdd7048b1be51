package health

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAnswersHungAfter(t *testing.T) {
	var a answers
	if got := a.hungAfter(500 * time.Millisecond); got != 500*time.Millisecond {
		t.Fatalf("no answers yet: %v, want HUNG_AFTER", got)
	}
	a.add(5 * time.Millisecond)
	if got := a.hungAfter(500 * time.Millisecond); got != 500*time.Millisecond {
		t.Fatalf("fast answers: %v, want HUNG_AFTER", got)
	}
	a.add(400 * time.Millisecond) // one retransmission's wait, and some
	if got := a.hungAfter(500 * time.Millisecond); got != 800*time.Millisecond {
		t.Fatalf("an answer of 400ms: %v, want twice that", got)
	}
	for range answersKept - 1 {
		a.add(5 * time.Millisecond)
	}
	if got := a.hungAfter(500 * time.Millisecond); got != 800*time.Millisecond {
		t.Fatalf("the slow answer %d checks ago: %v, still 800ms", answersKept-1, got)
	}
	a.add(5 * time.Millisecond)
	if got := a.hungAfter(500 * time.Millisecond); got != 500*time.Millisecond {
		t.Fatalf("the slow answer %d checks ago: %v, want HUNG_AFTER again", answersKept, got)
	}
}

// Where answers have been slow (etcd's packets lost and retransmitted), a
// stall as long as HUNG_AFTER is no hung apiserver: the check waits twice
// the slowest recent answer before it asks, and an etcd that stops still
// is found then.
func TestCheckHungAfterSlowAnswers(t *testing.T) {
	t.Run("a stall past HUNG_AFTER within twice the slowest answer", func(t *testing.T) {
		a := newStuckAPI(0)
		c := newHungChecker(t, a, 2*time.Second, 10*time.Second)
		c.answered.add(1500 * time.Millisecond)
		time.AfterFunc(2500*time.Millisecond, a.unstick)
		if r := c.Check(context.Background()); !r.OK || r.Hung {
			t.Fatalf("answer at 2.5s after an answer of 1.5s: %+v, want ok", r)
		}
	})
	t.Run("a stall past twice the slowest answer", func(t *testing.T) {
		a := newStuckAPI(0)
		c := newHungChecker(t, a, 2*time.Second, 10*time.Second)
		c.answered.add(1500 * time.Millisecond)
		r := c.Check(context.Background())
		if !r.Hung || r.Duration < 3*time.Second || !strings.Contains(r.Reason, "no answer within 3s") {
			t.Fatalf("no answer after an answer of 1.5s: %+v, want hung at 3s", r)
		}
	})
	t.Run("failed answers teach nothing", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(100 * time.Millisecond)
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, readyzEtcd)
		}))
		t.Cleanup(srv.Close)
		c := newDrainChecker(t, srv.URL)
		if r := c.Check(context.Background()); r.OK {
			t.Fatalf("500: %+v", r)
		}
		if got := c.answered.hungAfter(0); got != 0 {
			t.Fatalf("a failed answer raised the bound to %v", got)
		}
	})
}
