package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/kelseyhightower/envconfig"
)

// ownPrefixes are the environment name prefixes that belong to us; an unknown
// name under them is most likely a typo.
var ownPrefixes = [...]string{"NOVAEDGE_CP_VIP_", "NOVAEDGE_BGP_", "NOVAEDGE_BFD_"}

// Flags holds what the command line said: the env file and every config flag given.
type Flags struct {
	EnvFile string
	set     map[string]string // environment name -> value given by its flag
	file    map[string]string // the env file as the last load read it (a Reloader's start)
}

type flagValue struct {
	env  string
	set  map[string]string
	bool bool
}

func (v *flagValue) String() string     { return "" }
func (v *flagValue) Set(s string) error { v.set[v.env] = s; return nil }
func (v *flagValue) IsBoolFlag() bool   { return v.bool }

// BindFlags defines --env-file and one flag per configuration variable on fs.
func BindFlags(fs *flag.FlagSet) *Flags {
	fl := &Flags{set: map[string]string{}}
	fs.StringVar(&fl.EnvFile, "env-file", "", "load variables from a systemd-style env file (KEY=VALUE)")
	for _, f := range fields() {
		usage := f.Desc + " (" + f.Env
		if f.Default != "" {
			usage += ", default " + f.Default
		}
		fs.Var(&flagValue{env: f.Env, set: fl.set, bool: f.Bool}, f.Flag, usage+")")
	}
	return fl
}

// Load builds the configuration. Precedence, lowest first: defaults, the env
// file, the process environment, flags. The effective values are put into the
// process environment for envconfig to decode, then the environment is
// restored as it was; the result is validated. It returns warnings (unknown
// variables in the environment) and an *Error naming the variable for any
// invalid value.
func Load(fl *Flags) (*Config, []string, error) {
	environ.Lock()
	defer environ.Unlock()
	c, _, warnings, err := loadGiven(fl)
	return c, warnings, err
}

// environ is held while a load borrows the process environment (envconfig
// reads nothing else): one load at a time, whatever goroutine asks.
var environ sync.Mutex

// loadGiven merges the flags, the env file and the environment into the process
// environment, decodes and validates the result, and restores the
// environment. It also returns the variables as given.
func loadGiven(fl *Flags) (*Config, map[string]string, []string, error) {
	if fl == nil {
		fl = &Flags{}
	}
	defer restoreEnv(saveEnv())
	warnings, err := mergeInto(fl)
	if err != nil {
		return nil, nil, nil, err
	}
	given := map[string]string{}
	for _, f := range fields() {
		if v, ok := os.LookupEnv(f.Env); ok {
			given[f.Env] = v
		}
	}
	var c Config
	if err := envconfig.Process("", &c); err != nil {
		return nil, nil, warnings, translate(err)
	}
	if err := c.Validate(); err != nil {
		return nil, nil, warnings, err
	}
	if c.InsecureSkipTLSVerify {
		warnings = append(warnings, "NOVAEDGE_CP_VIP_INSECURE_SKIP_TLS_VERIFY is on: the apiserver's certificate is not verified and the token goes to whatever listens on its port")
	}
	if c.HealthHungAfter != 0 && c.HealthHungAfter >= c.HealthTimeout {
		warnings = append(warnings, fmt.Sprintf("NOVAEDGE_CP_VIP_HEALTH_HUNG_AFTER (%s) is not below NOVAEDGE_CP_VIP_HEALTH_TIMEOUT (%s): a hung apiserver is found only by FAIL_THRESHOLD timeouts", c.HealthHungAfter, c.HealthTimeout))
	}
	sort.Strings(warnings)
	return &c, given, warnings, nil
}

// mergeInto puts the effective values into the process environment: the env
// file's under the environment's, flags over both; an empty value is unset
// (the default applies) unless it turns the feature off. It returns
// warnings for unknown variables of ours in the environment.
func mergeInto(fl *Flags) ([]string, error) {
	var warnings []string
	if fl.EnvFile != "" {
		vars, err := loadEnvFile(fl.EnvFile)
		if err != nil {
			return nil, err
		}
		fl.file = vars
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if isOwnName(k) {
			if _, known := fieldByEnv(k); !known {
				warnings = append(warnings, "unknown variable "+k+" ignored")
			}
		}
	}
	for env, v := range fl.set {
		if err := os.Setenv(env, v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", env, err)
		}
	}
	for _, f := range fields() {
		if v, ok := os.LookupEnv(f.Env); ok && strings.TrimSpace(v) == "" && !f.EmptyOff {
			os.Unsetenv(f.Env) // empty means "not set": the default applies
		}
	}
	return warnings, nil
}

// Given returns the variables the flags, the env file and the environment
// set, as given (the same precedence as Load), after checking with Load
// that they make a valid configuration: what `manifest pod` writes into a
// pod, so that the pod runs exactly this configuration.
func Given(fl *Flags) (map[string]string, error) {
	environ.Lock()
	defer environ.Unlock()
	_, given, _, err := loadGiven(fl)
	return given, err
}

// loadEnvFile exports the file's variables that the environment does not
// set, and returns the file's variables. Unknown names of ours in a file
// are an error: the file is ours to check.
func loadEnvFile(path string) (map[string]string, error) {
	vars, err := readEnvFile(path)
	if err != nil {
		return nil, err
	}
	for k, v := range vars {
		if _, inEnv := os.LookupEnv(k); !inEnv {
			if err := os.Setenv(k, v); err != nil {
				return nil, fmt.Errorf("setting %s: %w", k, err)
			}
		}
	}
	return vars, nil
}

// saveEnv records our variables as the environment has them now.
func saveEnv() map[string]*string {
	saved := map[string]*string{}
	for _, f := range fields() {
		if v, ok := os.LookupEnv(f.Env); ok {
			saved[f.Env] = &v
		} else {
			saved[f.Env] = nil
		}
	}
	return saved
}

func restoreEnv(saved map[string]*string) {
	for k, v := range saved {
		if v == nil {
			os.Unsetenv(k)
		} else {
			os.Setenv(k, *v)
		}
	}
}

func isOwnName(k string) bool {
	for _, p := range ownPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// translate turns envconfig's errors into an *Error naming the variable.
func translate(err error) error {
	var pe *envconfig.ParseError
	if errors.As(err, &pe) {
		f, _ := fieldByEnv(pe.KeyName)
		reason := pe.Err.Error()
		if strings.Contains(reason, "strconv.") {
			reason = "not a valid " + pe.TypeName
		}
		return &Error{Field: f, Value: pe.Value, Reason: reason}
	}
	const missing = "required key "
	if msg := err.Error(); strings.HasPrefix(msg, missing) {
		name := strings.TrimSuffix(strings.TrimPrefix(msg, missing), " missing value")
		f, _ := fieldByEnv(name)
		return &Error{Field: f, Reason: "is required"}
	}
	return err
}

// LoadMap builds the configuration from exactly vars (defaults for the rest),
// ignoring the process environment, and validates it. The environment is
// left as it was.
func LoadMap(vars map[string]string) (*Config, error) {
	environ.Lock()
	defer environ.Unlock()
	return loadMap(vars)
}

// loadMap is LoadMap, environ held.
func loadMap(vars map[string]string) (*Config, error) {
	defer restoreEnv(saveEnv())
	for _, f := range fields() {
		os.Unsetenv(f.Env)
	}
	for k, v := range vars {
		if _, known := fieldByEnv(k); !known {
			return nil, fmt.Errorf("unknown variable %s", k)
		}
		if err := os.Setenv(k, v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", k, err)
		}
	}
	c, _, _, err := loadGiven(&Flags{})
	return c, err
}
