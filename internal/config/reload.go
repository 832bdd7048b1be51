package config

import (
	"fmt"
	"os"
	"reflect"
)

// Reloader loads the configuration again from the env file the daemon
// started with (SIGHUP, `systemctl reload`).
//
// The systemd unit both names the file with --env-file and loads it with
// EnvironmentFile=, so at start the process environment holds the file's
// values, and the environment outranks the file. A variable whose value in
// the environment is the one the file had at start therefore counts as the
// file's: the file read again decides it, set, changed or removed. Anything
// else in the environment, and the flags, keep outranking the file.
type Reloader struct {
	fl      *Flags
	atStart map[string]string // the file as it was at start
}

// NewReloader reloads what Load(fl) loaded: the env file as that load read
// it is the start; Load reads it again.
func NewReloader(fl *Flags) *Reloader {
	r := &Reloader{fl: fl}
	if fl != nil {
		r.atStart = fl.file
	}
	return r
}

// HasFile says whether there is an env file to read again.
func (r *Reloader) HasFile() bool { return r.fl != nil && r.fl.EnvFile != "" }

// Load reads the env file again and returns the configuration it makes,
// validated, or an error naming what is wrong.
func (r *Reloader) Load() (*Config, error) {
	environ.Lock() // the environment it reads is not borrowed by another load meanwhile
	defer environ.Unlock()
	vars, err := readEnvFile(r.fl.EnvFile)
	if err != nil {
		return nil, err
	}
	for k := range vars {
		if _, ours := fieldByEnv(k); !ours {
			delete(vars, k) // exported at start for the process; not ours to reload
		}
	}
	for _, f := range fields() {
		v, ok := os.LookupEnv(f.Env)
		if old, fromFile := r.atStart[f.Env]; ok && !(fromFile && old == v) {
			vars[f.Env] = v
		}
	}
	for env, v := range r.fl.set {
		vars[env] = v
	}
	return loadMap(vars)
}

// Changes lists the variables whose values differ between old and new:
// those a reload applies (Field.Live) and those that need a restart.
func Changes(old, new *Config) (live, restart []string) {
	for _, f := range fields() {
		if reflect.DeepEqual(f.Value(old), f.Value(new)) {
			continue
		}
		if f.Live {
			live = append(live, f.Env)
		} else {
			restart = append(restart, f.Env)
		}
	}
	return live, restart
}

// WithLive returns a copy of old with the live fields (Field.Live) of new:
// the configuration a reload leaves running.
func WithLive(old, new *Config) *Config {
	out := *old
	dst, src := reflect.ValueOf(&out).Elem(), reflect.ValueOf(new).Elem()
	for _, f := range fields() {
		if f.Live {
			dst.Field(f.index).Set(src.Field(f.index))
		}
	}
	return &out
}

// Reload is what a reload leaves running, from the running configuration
// and the one the env file makes now (Reloader.Load, valid on its own):
// running with new's live values, validated as a whole — the live values
// must fit the restart-only ones that stay — and the variables it applies
// and those that need a restart. An error names what does not fit;
// nothing is applied then.
func Reload(running, next *Config) (merged *Config, live, restart []string, err error) {
	live, restart = Changes(running, next)
	merged = WithLive(running, next)
	if err := merged.Validate(); err != nil {
		if len(restart) > 0 {
			return nil, live, restart, fmt.Errorf("%w (with the running values of %v, which need a restart)", err, restart)
		}
		return nil, live, restart, err
	}
	return merged, live, restart, nil
}
