// Package scenario reads the arguments of a scripted scenario's command
// (github.com/cockroachdb/datadriven): the harnesses of the node's parts
// (vrrp's Core, acd's Guard, health's Judge, l2's Burst) share it.
package scenario

import (
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// Cmd is one command of a scenario, with the test it fails.
type Cmd struct {
	t testing.TB
	d *datadriven.TestData
}

// New returns the command d of the scenario t runs.
func New(t testing.TB, d *datadriven.TestData) Cmd { return Cmd{t: t, d: d} }

// Arg returns the first value of the argument key ("" for a bare key), and
// whether the command has it.
func (c Cmd) Arg(key string) (string, bool) {
	for _, a := range c.d.CmdArgs {
		if a.Key == key {
			if len(a.Vals) == 0 {
				return "", true
			}
			return a.Vals[0], true
		}
	}
	return "", false
}

// Has says whether the command has the argument key.
func (c Cmd) Has(key string) bool { _, ok := c.Arg(key); return ok }

// Dur returns the argument key as a duration, def without it; a value
// that does not parse fails the test.
func (c Cmd) Dur(key string, def time.Duration) time.Duration {
	return parsed(c, key, def, time.ParseDuration)
}

// Int returns the argument key as an integer, def without it; a value
// that does not parse fails the test.
func (c Cmd) Int(key string, def int) int {
	return parsed(c, key, def, strconv.Atoi)
}

// parsed returns the argument key read by parse, def without it; a value
// that does not parse fails the test.
func parsed[T any](c Cmd, key string, def T, parse func(string) (T, error)) T {
	v, ok := c.Arg(key)
	if !ok {
		return def
	}
	x, err := parse(v)
	if err != nil {
		c.d.Fatalf(c.t, "%s: %v", key, err)
	}
	return x
}

// First returns the command's first argument's key (its object); none
// fails the test.
func (c Cmd) First() string {
	if len(c.d.CmdArgs) == 0 {
		c.d.Fatalf(c.t, "%s needs an argument", c.d.Cmd)
	}
	return c.d.CmdArgs[0].Key
}

// Walk runs every scenario under dir, each on a fresh harness: fresh
// returns the function that runs one command of it.
func Walk(t *testing.T, dir string, fresh func() func(*testing.T, *datadriven.TestData) string) {
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		datadriven.RunTest(t, path, fresh())
	})
}
