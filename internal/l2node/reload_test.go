package l2node

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
)

type recorded []string

func (r *recorded) SetPriority(p uint8) { *r = append(*r, fmt.Sprint("priority ", p)) }
func (r *recorded) SetPreempt(on bool)  { *r = append(*r, fmt.Sprint("preempt ", on)) }
func (r *recorded) SetSettleWithin(d time.Duration) {
	*r = append(*r, fmt.Sprint("settle within ", d))
}

// TestReloadHandsTheElectionWhatChanged: only the settings that differ,
// in order; HEALTH_INTERVAL as the settling bound it sets.
func TestReloadHandsTheElectionWhatChanged(t *testing.T) {
	prev, err := config.LoadMap(map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_INTERFACE": "eth0"})
	if err != nil {
		t.Fatal(err)
	}
	var got recorded
	Reload(&got, prev, prev)
	if len(got) != 0 {
		t.Fatalf("nothing changed, yet the election was told %v", got)
	}
	next := *prev
	next.Priority, next.Preempt, next.HealthInterval = prev.Priority+1, !prev.Preempt, 2*prev.HealthInterval
	Reload(&got, prev, &next)
	want := []string{fmt.Sprint("priority ", next.Priority), fmt.Sprint("preempt ", next.Preempt),
		fmt.Sprint("settle within ", health.SettleWithin(next.HealthInterval))}
	if !slices.Equal(got, want) {
		t.Fatalf("told %v, want %v", got, want)
	}
}
