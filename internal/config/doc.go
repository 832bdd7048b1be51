// Package config holds the one configuration struct of novaedge-cpvip, loads
// it from an env file, the environment and command-line flags (in rising
// precedence), and validates every value once.
//
// The struct tags are the single source of truth: `envconfig` is the public
// variable name, `flag` the equal command-line flag, `default` the default and
// `desc` the text of the generated reference (docs/configuration.md).
package config
