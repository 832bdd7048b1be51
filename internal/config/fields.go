package config

import (
	"reflect"
	"slices"
	"sync"
)

// Field describes one configuration variable, read from the Config struct tags.
type Field struct {
	Name     string // Go field name
	Env      string // public environment variable
	Flag     string // equal command-line flag, without dashes
	Default  string
	Desc     string
	Secret   bool // never printed
	Required bool
	Bool     bool // a flag that may stand alone (--preempt)
	EmptyOff bool // an empty value turns the feature off instead of meaning "default"
	Live     bool // a reload (SIGHUP) applies it to the running daemon; else it needs a restart
	index    int
}

// Fields lists every configuration variable in declaration order.
func Fields() []Field { return slices.Clone(fields()) }

// fields reads the struct tags once: they are constant, and a load looks
// up every variable it is given (reflection's tag parsing dominated a
// load's cost).
var fields = sync.OnceValue(func() []Field {
	t := reflect.TypeOf(Config{})
	out := make([]Field, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		out = append(out, Field{
			Name:     sf.Name,
			Env:      sf.Tag.Get("envconfig"),
			Flag:     sf.Tag.Get("flag"),
			Default:  sf.Tag.Get("default"),
			Desc:     sf.Tag.Get("desc"),
			Secret:   sf.Tag.Get("secret") == "true",
			Required: sf.Tag.Get("required") == "true",
			Bool:     sf.Type.Kind() == reflect.Bool,
			EmptyOff: sf.Tag.Get("empty") == "off",
			Live:     sf.Tag.Get("reload") == "live",
			index:    i,
		})
	}
	return out
})

// fieldByEnv returns the field of an environment variable name.
func fieldByEnv(env string) (Field, bool) {
	for _, f := range fields() {
		if f.Env == env {
			return f, true
		}
	}
	return Field{}, false
}

// fieldByName returns the field of a Go struct field name.
func fieldByName(name string) (Field, bool) {
	for _, f := range fields() {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Value returns the field's current value in c.
func (f Field) Value(c *Config) any {
	return reflect.ValueOf(c).Elem().Field(f.index).Interface()
}

// Default returns the default value of the variable env ("" when it has none).
func Default(env string) string {
	f, _ := fieldByEnv(env)
	return f.Default
}

// IsSecret says whether the value given for the variable env holds a
// secret: a variable tagged secret, or a peer list with a per-peer
// password. Such values never go where others can read them (a pod's env is
// readable through the API in its mirror pod).
func IsSecret(env, value string) bool {
	f, ok := fieldByEnv(env)
	if !ok || value == "" {
		return false
	}
	if f.Secret {
		return true
	}
	if f.Name == "BGPPeers" {
		var peers PeerList
		if err := peers.Decode(value); err != nil {
			return true // unparsable: treat as secret rather than echo it
		}
		for _, p := range peers {
			if p.Password != "" {
				return true
			}
		}
	}
	return false
}
