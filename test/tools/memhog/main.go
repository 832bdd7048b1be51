// Command memhog holds -mb MiB of anonymous memory and touches every page
// of it again each -every, until SIGTERM: memory pressure for the stress
// suite (with no swap, the kernel can only take the file pages of the
// processes beside it in its memory cgroup: their code is read from disk
// again and again).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	mb := flag.Int("mb", 64, "MiB to hold")
	every := flag.Duration("every", time.Second, "time between two passes over the memory")
	oom := flag.Int("oom-score-adj", 0, "written to /proc/self/oom_score_adj before anything is held (1000: the OOM killer's first)")
	flag.Parse()
	if *mb < 1 || *every <= 0 || *oom < -1000 || *oom > 1000 {
		fmt.Fprintln(os.Stderr, "memhog: want -mb 1 or more, a positive -every and -oom-score-adj -1000..1000")
		os.Exit(2)
	}
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte(fmt.Sprint(*oom)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "memhog:", err)
		os.Exit(1)
	}
	mem := make([]byte, *mb<<20)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for pass := byte(1); ; pass++ {
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = pass
		}
		if pass == 1 {
			fmt.Printf("memhog: holding %d MiB\n", *mb)
		}
		select {
		case <-sig:
			return
		case <-tick.C:
		}
	}
}
