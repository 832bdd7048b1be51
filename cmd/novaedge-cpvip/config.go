package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
)

// loadConfig parses flags and loads the configuration; on failure it prints
// one line naming the variable and returns the exit code.
func loadConfig(name string, args []string, stderr io.Writer) (*config.Config, *config.Flags, []string, int) {
	fl, code := parseFlags(name, args, stderr, nil)
	if fl == nil {
		return nil, nil, nil, code
	}
	cfg, warnings, err := config.Load(fl)
	if err != nil {
		fmt.Fprintf(stderr, "novaedge-cpvip: %v\n", err)
		return nil, nil, nil, exitConfig
	}
	return cfg, fl, warnings, -1
}

func checkConfig(args []string, stdout, stderr io.Writer) int {
	cfg, fl, warnings, code := loadConfig("check-config", args, stderr)
	if cfg == nil {
		return code
	}
	if fl.EnvFile != "" {
		if msg := unreadableByService(fl.EnvFile); msg != "" {
			warnings = append(warnings, msg)
		}
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	ca, err := health.CheckCA(cfg.CAFiles())
	if err != nil {
		fmt.Fprintf(stderr, "novaedge-cpvip: invalid cluster CA (NOVAEDGE_CP_VIP_CA_FILE, --ca-file): %v\n", err)
		return exitConfig
	}
	fmt.Fprint(stdout, config.Describe(cfg))
	if ca == "" {
		fmt.Fprintf(stderr, "note: no cluster CA at %s yet: the apiserver is checked unverified, and without the token, until one appears\n", strings.Join(cfg.CAFiles(), " or "))
	}
	if cfg.IPv6OverIPv4() {
		fmt.Fprintln(stderr, "note: no IPv6 BGP peer: the IPv6 VIP is announced over the IPv4 sessions (MP-BGP) with an IPv6 next hop; the routers must activate IPv6 unicast for these neighbours")
	}
	fmt.Fprintln(stderr, "configuration is valid")
	return exitOK
}

// newLogger returns the daemon's logger and its level, which a reload may change.
func newLogger(cfg *config.Config, w io.Writer) (*slog.Logger, *slog.LevelVar) {
	level := new(slog.LevelVar)
	level.Set(slog.Level(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), level
	}
	return slog.New(slog.NewTextHandler(w, opts)), level
}
