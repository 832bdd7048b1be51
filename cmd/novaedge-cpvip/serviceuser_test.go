package main

import (
	"io/fs"
	"os/user"
	"testing"
)

func TestReadableBy(t *testing.T) {
	u := &user.User{Uid: "998", Gid: "997"}
	for _, c := range []struct {
		mode     fs.FileMode
		uid, gid uint32
		want     bool
	}{
		{0o640, 0, 997, true},   // the package's way: root's, the service's group reads
		{0o600, 0, 0, false},    // root only: an older install
		{0o600, 998, 998, true}, // chowned to the service's user
		{0o604, 0, 0, true},     // world-readable
		{0o460, 998, 0, true},   // owner bits decide for the owner
		{0o060, 998, 997, false},
		{0o604, 0, 997, false}, // group bits decide for a member of the group
	} {
		if got := readableBy(c.mode, c.uid, c.gid, u); got != c.want {
			t.Errorf("mode %04o owner %d:%d: readable %v, want %v", c.mode, c.uid, c.gid, got, c.want)
		}
	}
}
