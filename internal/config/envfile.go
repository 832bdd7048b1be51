package config

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxEnvFileLine bounds one line of an env file; longer lines are an error.
const maxEnvFileLine = 64 << 10

// ParseEnvFile reads a systemd-style environment file: KEY=VALUE lines,
// blank lines and lines starting with # or ; ignored, values optionally in
// single or double quotes, an optional leading "export ". Errors name the line.
func ParseEnvFile(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxEnvFileLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || !validKey(key) {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", n)
		}
		v, err := unquote(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", n, key, err)
		}
		out[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading env file: %w", err)
	}
	return out, nil
}

func validKey(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func unquote(v string) (string, error) {
	if v == "" || (v[0] != '"' && v[0] != '\'') {
		return v, nil
	}
	q := v[0]
	if len(v) < 2 || v[len(v)-1] != q {
		return "", fmt.Errorf("unterminated %c quote", q)
	}
	inner := v[1 : len(v)-1]
	if q == '"' {
		inner = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(inner)
	}
	return inner, nil
}

// readEnvFile parses the env file at path; unknown names of ours are an error.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading --env-file: %w", err)
	}
	defer f.Close()
	vars, err := ParseEnvFile(f)
	if err != nil {
		return nil, fmt.Errorf("env file %s: %w", path, err)
	}
	for k := range vars {
		if _, known := fieldByEnv(k); isOwnName(k) && !known {
			return nil, fmt.Errorf("env file %s: unknown variable %s", path, k)
		}
	}
	return vars, nil
}
