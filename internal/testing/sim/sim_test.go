package sim

import (
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"iter"
	"maps"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	seeds        = flag.Int("sim.seeds", 300, "schedules to run")
	firstSeed    = flag.Uint64("sim.first", 1, "the first seed")
	budget       = flag.Duration("sim.budget", 0, "run schedules for this long instead of -sim.seeds")
	oneSeed      = flag.Uint64("sim.seed", 0, "run this seed alone and print its trace")
	collect      = flag.Bool("sim.collect", false, "run every schedule and list the invariants broken, with their seeds, instead of stopping at the first")
	fingerprints = flag.String("sim.fingerprint", "", "write each schedule's seed and the hash of its trace to this file, and log one hash of them all: a change that only restructures the product's code leaves them as they were")
	fpSkip       = flag.String("sim.fingerprint.skip", "", "leave the trace's lines matching this regular expression out of the fingerprint (log lines a change moved or added)")
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
	// The runs allocate much and keep little (a world each): collecting
	// less often halves the time of `make sim`, for a few MB more heap.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	start := time.Now()
	var runs, events, expected int
	broken := map[string][]uint64{}
	var virtual time.Duration
	var fingerprint bytes.Buffer
	more := func(n int) bool { return *budget > 0 && time.Since(start) <= *budget || *budget == 0 && n < *seeds }
	for seed, r := range inOrder(*firstSeed, more) {
		runs, events, virtual, expected = runs+1, events+r.Events, virtual+r.Virtual, expected+r.Expected
		if *fingerprints != "" {
			fmt.Fprintf(&fingerprint, "%d %x\n", seed, hash(r))
		}
		if r.Failure != nil && *collect {
			broken[r.Failure.Invariant] = append(broken[r.Failure.Invariant], seed)
			continue
		}
		if r.Failure != nil {
			t.Fatalf("%s\nreproduce: go test ./internal/testing/sim -run TestSimulation -sim.seed %d", Shrink(r).Report(120), seed)
		}
	}
	for _, inv := range slices.Sorted(maps.Keys(broken)) {
		seeds := broken[inv]
		t.Errorf("BROKEN %q in %d of %d schedules, seeds %v\n%s", inv, len(seeds), runs, seeds[:min(len(seeds), 10)],
			Shrink(Run(seeds[0], nil)).Report(40))
	}
	el := time.Since(start)
	if *fingerprints != "" {
		if err := os.WriteFile(*fingerprints, fingerprint.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("FINGERPRINT %x of seeds %d-%d", fnv64(fingerprint.Bytes()), *firstSeed, *firstSeed+uint64(runs)-1)
	}
	t.Logf("SIM %d schedules in %v: %.0f schedules/s, %.0f events/s, %.0fx real time (%v virtual), %d promises of a fault alone checked",
		runs, el.Round(time.Millisecond), float64(runs)/el.Seconds(), float64(events)/el.Seconds(),
		virtual.Seconds()/el.Seconds(), virtual.Round(time.Second), expected)
}

// inOrder runs schedules from seed first on one goroutine per CPU (each
// run is a world of its own) and yields their results in seed order while
// more(the number started) says to start another.
func inOrder(first uint64, more func(started int) bool) iter.Seq2[uint64, Result] {
	return func(yield func(uint64, Result) bool) {
		type done struct {
			seed uint64
			r    Result
		}
		var (
			mu      sync.Mutex
			started int
			stop    bool
			out     = make(chan done)
			wg      sync.WaitGroup
		)
		next := func() (uint64, bool) {
			mu.Lock()
			defer mu.Unlock()
			if stop || !more(started) {
				return 0, false
			}
			started++
			return first + uint64(started-1), true
		}
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for seed, ok := next(); ok; seed, ok = next() {
					out <- done{seed, Run(seed, nil)}
				}
			})
		}
		go func() { wg.Wait(); close(out) }()
		defer func() { // the runs under way end; their results are dropped
			mu.Lock()
			stop = true
			mu.Unlock()
			for range out {
			}
		}()
		waiting := map[uint64]Result{}
		want := first
		for d := range out {
			waiting[d.seed] = d.r
			for r, ok := waiting[want]; ok; r, ok = waiting[want] {
				delete(waiting, want)
				if !yield(want, r) {
					return
				}
				want++
			}
		}
	}
}

// TestDeterministic: a seed is its run, event for event, whatever Go's map
// order (seeds 123, 132 and 192 run a conflict check over two VIPs and
// several members).
func TestDeterministic(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5, 123, 123, 132, 132, 192, 192} {
		a, b := Run(seed, nil), Run(seed, nil)
		if ha, hb := hash(a), hash(b); ha != hb || a.Events != b.Events {
			t.Fatalf("seed %d: two runs differ (%d and %d events)", seed, a.Events, b.Events)
		}
	}
}

func hash(r Result) uint64 {
	lines := r.trace.trace
	if *fpSkip != "" {
		skip := regexp.MustCompile(*fpSkip)
		lines = slices.DeleteFunc(slices.Clone(lines), skip.MatchString)
	}
	return fnv64([]byte(strings.Join(lines, "\n")))
}

func fnv64(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// TestBackupRestartedThenMasterKilled: a backup's daemon stopped and
// started again (its pod's manifest out and back), then, a moment after,
// the master's daemon SIGKILLed and restarted 1.5 s later: the master
// keeps the VIP (the promise of a kill, checked beside the restart). The
// kubeadm e2e found it: the fresh backup, which never heard the master
// advertise, took an answer for the VIP for a stranger's, took over, and
// the resumed master lost the tie to it.
func TestBackupRestartedThenMasterKilled(t *testing.T) {
	checked := 0
	for seed := uint64(1); checked < 24 && seed < 5000; seed++ {
		sh := draw(newWorld(seed))
		if sh.Keepalived || !sh.Check || sh.RestartWait != 4*time.Second || sh.Interval != 100*time.Millisecond {
			continue
		}
		// Which backup restarts varies with the seed's priorities; the
		// stop of the holder makes the next one the holder and itself a
		// fresh backup, as in the e2e.
		gap := []time.Duration{50, 150, 300, 600, 1000, 2000}[checked%6] * time.Millisecond
		faults := []fault{
			{At: 20 * time.Second, What: fStop, Node: -1, Dur: 2 * time.Second},
			{At: 22*time.Second + gap, What: fKill, Node: -1, Dur: 1500 * time.Millisecond},
		}
		r := Run(seed, faults)
		if r.Failure != nil {
			t.Fatalf("seed %d, the kill %v after the restart: %s", seed, gap, Shrink(r).Report(200))
		}
		if r.Expected > 0 {
			checked++
		}
	}
	if checked < 24 {
		t.Fatalf("the kill's promise was checked in %d schedules, want 24", checked)
	}
}
