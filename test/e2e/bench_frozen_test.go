package e2e

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkDaemonFrozen: our daemon on the holder SIGSTOPped for 10 s at
// the build's defaults (200 ms advertisements, RESTART_WAIT 4 s): the time
// until another node holds the VIP alone. The frozen holder's VIP lapses
// (its lifetime, 3 s, renewed every 750 ms: 2.25-3.2 s after the freeze)
// and a backup takes over once the host stops answering, before
// RESTART_WAIT; thawed, the daemon steps back. Two holders at no sample.
func BenchmarkDaemonFrozen(b *testing.B) {
	dflt := daemonDefaults(b)
	c := newCluster(b, 3, "NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32", "NOVAEDGE_CP_VIP_ADVERT_INTERVAL="+dflt.AdvertInterval.String(),
		"NOVAEDGE_CP_VIP_HEALTH_INTERVAL="+dflt.HealthInterval.String(), "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT="+dflt.HealthTimeout.String())
	quiet(c.Lab)
	c.startAll(b)
	c.settledHolder(b, vip4, -1, 30*time.Second)
	mon := c.monitor(b, vip4)
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		for trial := range benchTrials() {
			h := c.settledHolder(b, vip4, -1, 30*time.Second)
			frozen := time.Now()
			if err := c.procs[h].Signal(syscall.SIGSTOP); err != nil {
				b.Fatal(err)
			}
			_, d := c.waitHolder(b, vip4, h, 15*time.Second)
			took = append(took, d) // waitHolder counts from its start, right after the SIGSTOP
			b.Logf("trial %d: %s frozen, another node holds the VIP after %s", trial+1, c.nodes[h].Name, d.Round(time.Millisecond))
			time.Sleep(time.Until(frozen.Add(10 * time.Second)))
			if err := c.procs[h].Signal(syscall.SIGCONT); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	double, _ := mon.stop()
	if double > maxTwoHolders {
		b.Errorf("two holders for %s across the freezes (bound %s)", double, maxTwoHolders)
	}
	row := Row{Name: "L2, our daemon frozen on the holder (SIGSTOP 10 s), the defaults: time to another holder", Unit: "ms", Ours: durFigure(took),
		Note: "longest double holding " + double.Round(time.Millisecond).String()}
	b.Logf("%s: %+v", row.Name, row.Ours)
	record(b, row)
}
