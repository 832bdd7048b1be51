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
	flag.Parse()
	if *mb < 1 || *every <= 0 {
		fmt.Fprintln(os.Stderr, "memhog: want -mb 1 or more and a positive -every")
		os.Exit(2)
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
