package config

import "testing"

func TestLocalReach(t *testing.T) {
	for _, c := range []struct {
		in, want string
		port     int
		err      bool
		loopback bool
	}{
		{in: ":9450", want: "127.0.0.1:9450", port: 9450},
		{in: "0.0.0.0:9450", want: "127.0.0.1:9450", port: 9450},
		{in: "[::]:9450", want: "127.0.0.1:9450", port: 9450},
		{in: "127.0.0.1:9450", want: "127.0.0.1:9450", port: 9450, loopback: true},
		{in: "[::1]:9450", want: "[::1]:9450", port: 9450, loopback: true},
		{in: "192.0.2.11:9450", want: "192.0.2.11:9450", port: 9450},
		{in: "localhost:1", want: "localhost:1", port: 1, loopback: true},
		{in: "9450", err: true},
		{in: ":http", err: true},
		{in: ":0", err: true},
	} {
		got, port, err := LocalReach(c.in)
		if (err != nil) != c.err || got != c.want || port != c.port {
			t.Errorf("LocalReach(%q) = %q, %d, %v", c.in, got, port, err)
		}
		if IsLoopbackListen(c.in) != c.loopback {
			t.Errorf("IsLoopbackListen(%q) = %v", c.in, !c.loopback)
		}
	}
}
