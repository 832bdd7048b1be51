package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// serviceUser is the user novaedge-cpvip.service runs as (packaging:
// sysusers.d).
const serviceUser = "novaedge-cpvip"

// unreadableByService says, when this host has the service's user and it
// could not read path (check-config runs as root and reads anything), what
// is wrong and how to fix it; "" when it can, or there is no such user.
func unreadableByService(path string) string {
	u, err := user.Lookup(serviceUser)
	if err != nil {
		return ""
	}
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if readableBy(st.Mode().Perm(), s.Uid, s.Gid, u) {
		return ""
	}
	return fmt.Sprintf("%s (owned by %d:%d, mode %04o) is not readable by the service's user %s: it would wait for it; as root: chgrp %s %s && chmod 0640 %s",
		path, s.Uid, s.Gid, st.Mode().Perm(), serviceUser, serviceUser, path, path)
}

// readableBy says whether a file with mode, owner uid and group gid is
// readable by u, by its owner, group or other bits (u's supplementary
// groups included).
func readableBy(mode fs.FileMode, uid, gid uint32, u *user.User) bool {
	id := strconv.FormatUint(uint64(uid), 10)
	if u.Uid == id {
		return mode&0o400 != 0
	}
	groups, _ := u.GroupIds()
	for _, g := range append(groups, u.Gid) {
		if g == strconv.FormatUint(uint64(gid), 10) {
			return mode&0o040 != 0
		}
	}
	return mode&0o004 != 0
}
