package ociimage

import "encoding/binary"

// The capabilities a file may carry (linux/capability.h).
const (
	CapNetAdmin = 12
	CapNetRaw   = 13
)

// xattrCaps is the PAX record that carries a file's capabilities in a
// layer; containerd and other runtimes set it as the security.capability
// extended attribute when they unpack the layer.
const xattrCaps = "SCHILY.xattr.security.capability"

// fileCaps encodes capabilities as security.capability, revision 2
// (struct vfs_cap_data): permitted and effective, none inheritable. A
// process that execs the file gains them whatever its user, within the
// bounding set, unless no_new_privs is set.
func fileCaps(caps ...int) string {
	const (
		revision2 = 0x02000000
		effective = 0x000001
	)
	var permitted [2]uint32
	for _, c := range caps {
		permitted[c/32] |= 1 << (c % 32)
	}
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], revision2|effective)
	binary.LittleEndian.PutUint32(b[4:], permitted[0]) // data[0].permitted
	binary.LittleEndian.PutUint32(b[12:], permitted[1])
	return string(b)
}
