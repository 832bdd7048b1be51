package sim

import (
	"flag"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	seeds     = flag.Int("sim.seeds", 300, "schedules to run")
	firstSeed = flag.Uint64("sim.first", 1, "the first seed")
	budget    = flag.Duration("sim.budget", 0, "run schedules for this long instead of -sim.seeds")
	oneSeed   = flag.Uint64("sim.seed", 0, "run this seed alone and print its trace")
	collect   = flag.Bool("sim.collect", false, "run every schedule and list the invariants broken, with their seeds, instead of stopping at the first")
)

// TestSimulation runs seeded schedules and fails on the first invariant
// broken, with the schedule shrunk and its trace.
func TestSimulation(t *testing.T) {
	if *oneSeed != 0 {
		r := Run(*oneSeed, nil)
		t.Logf("%d events, %v virtual", r.Events, r.Virtual)
		if r.Failure != nil {
			t.Fatal(Shrink(r).Report(300))
		}
		t.Log(r.trace.tail(100000))
		return
	}
	start := time.Now()
	var runs, events, expected int
	broken := map[string][]uint64{}
	var virtual time.Duration
	for seed := *firstSeed; ; seed++ {
		if *budget > 0 && time.Since(start) > *budget || *budget == 0 && runs >= *seeds {
			break
		}
		r := Run(seed, nil)
		runs, events, virtual, expected = runs+1, events+r.Events, virtual+r.Virtual, expected+r.Expected
		if r.Failure != nil && *collect {
			broken[r.Failure.Invariant] = append(broken[r.Failure.Invariant], seed)
			continue
		}
		if r.Failure != nil {
			t.Fatalf("%s\nreproduce: go test ./internal/sim -run TestSimulation -sim.seed %d", Shrink(r).Report(120), seed)
		}
	}
	for _, inv := range slices.Sorted(maps.Keys(broken)) {
		seeds := broken[inv]
		t.Errorf("BROKEN %q in %d of %d schedules, seeds %v\n%s", inv, len(seeds), runs, seeds[:min(len(seeds), 10)],
			Shrink(Run(seeds[0], nil)).Report(40))
	}
	el := time.Since(start)
	t.Logf("SIM %d schedules in %v: %.0f schedules/s, %.0f events/s, %.0fx real time (%v virtual), %d promises of a fault alone checked",
		runs, el.Round(time.Millisecond), float64(runs)/el.Seconds(), float64(events)/el.Seconds(),
		virtual.Seconds()/el.Seconds(), virtual.Round(time.Second), expected)
}

// TestDeterministic: a seed is its run, event for event.
func TestDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		a, b := Run(seed, nil), Run(seed, nil)
		if ha, hb := hash(a), hash(b); ha != hb || a.Events != b.Events {
			t.Fatalf("seed %d: two runs differ (%d and %d events)", seed, a.Events, b.Events)
		}
	}
}

func hash(r Result) uint64 {
	h := fnv.New64a()
	h.Write([]byte(strings.Join(r.trace.trace, "\n")))
	return h.Sum64()
}
