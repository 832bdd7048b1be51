package config

import (
	"fmt"
	"strings"
)

// Reference renders the configuration reference as a Markdown table, one row
// per variable, in declaration order, with what a reload (SIGHUP) does with
// a change: applied to the running daemon, or left until a restart.
// docs/configuration.md embeds it.
func Reference() string {
	var b strings.Builder
	b.WriteString("| variable | flag | default | on reload | meaning |\n|---|---|---|---|---|\n")
	for _, f := range fields() {
		def := "`" + f.Default + "`"
		switch {
		case f.Required:
			def = "required"
		case f.Default == "":
			def = "empty"
		}
		reload := "restart"
		if f.Live {
			reload = "applied"
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | %s | %s | %s |\n", f.Env, f.Flag, def, reload, strings.ReplaceAll(f.Desc, "|", `\|`))
	}
	return b.String()
}

// EnvTemplate renders an env file with every variable commented out at its
// default and explained, for /etc/novaedge/cpvip.env.
func EnvTemplate() string {
	var b strings.Builder
	b.WriteString("# novaedge-cpvip configuration (systemd EnvironmentFile).\n")
	b.WriteString("# Uncomment and set what you need; NOVAEDGE_CP_VIP_ADDRESS is required.\n")
	b.WriteString("# Check it with: novaedge-cpvip check-config --env-file /etc/novaedge/cpvip.env\n")
	for _, f := range fields() {
		fmt.Fprintf(&b, "\n# %s\n", f.Desc)
		if f.Required {
			fmt.Fprintf(&b, "#%s=192.0.2.100/32\n", f.Env)
			continue
		}
		fmt.Fprintf(&b, "#%s=%s\n", f.Env, f.Default)
	}
	return b.String()
}

// Describe returns the effective configuration as "VARIABLE=value" lines,
// secrets redacted, for check-config.
func Describe(c *Config) string {
	var b strings.Builder
	for _, f := range fields() {
		v := fmt.Sprint(f.Value(c))
		if zero, ok := f.Value(c).(interface{ IsValid() bool }); ok && !zero.IsValid() {
			v = ""
		}
		if f.Secret && v != "" {
			v = "<redacted>"
		}
		fmt.Fprintf(&b, "%s=%s\n", f.Env, v)
	}
	return b.String()
}
