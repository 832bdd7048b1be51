package bfd

import (
	"crypto/sha1" //nolint:gosec // RFC 5880 section 6.7.4 specifies SHA1
	"crypto/subtle"
	"encoding/binary"
	"strconv"
)

// Protocol constants.
const (
	Version        = 1
	headerLen      = 24
	maxPacketLen   = headerLen + 28 // with the longest auth section (SHA1)
	sha1AuthLen    = 28
	DstPort        = 3784 // RFC 5881 section 4
	SrcPortMin     = 49152
	SrcPortMax     = 65535
	TTL            = 255
	maxPasswordLen = 16
)

// State is a session state (RFC 5880 section 4.1).
type State uint8

// The states.
const (
	AdminDown State = 0
	Down      State = 1
	Init      State = 2
	Up        State = 3
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case AdminDown:
		return "admindown"
	case Down:
		return "down"
	case Init:
		return "init"
	default:
		return "up"
	}
}

// Diag is a diagnostic code (RFC 5880 section 4.1).
type Diag uint8

// The diagnostic codes we use.
const (
	DiagNone         Diag = 0
	DiagTimeExpired  Diag = 1 // control detection time expired
	DiagNeighborDown Diag = 3 // neighbor signaled session down
	DiagAdminDown    Diag = 7 // administratively down
)

// String returns the diagnostic's name.
func (d Diag) String() string {
	switch d {
	case DiagNone:
		return "none"
	case DiagTimeExpired:
		return "detection-time-expired"
	case DiagNeighborDown:
		return "neighbor-down"
	case DiagAdminDown:
		return "administratively-down"
	}
	return "diag-" + strconv.Itoa(int(d))
}

// AuthType is the authentication type (RFC 5880 section 4.1).
type AuthType uint8

// The authentication types we implement.
const (
	AuthNone           AuthType = 0
	AuthSimple         AuthType = 1
	AuthKeyedSHA1      AuthType = 4
	AuthMeticulousSHA1 AuthType = 5
)

// Packet is a decoded control packet. It holds no slices into the buffer it
// was decoded from, and decoding into it does not allocate.
type Packet struct {
	Diag           Diag
	State          State
	Poll, Final    bool
	CPI, Demand    bool
	Multipoint     bool
	DetectMult     uint8
	MyDisc         uint32
	YourDisc       uint32
	DesiredMinTx   uint32 // microseconds
	RequiredMinRx  uint32 // microseconds
	RequiredEchoRx uint32 // microseconds
	Auth           bool
	AuthType       AuthType
	AuthKeyID      uint8
	AuthSeq        uint32
	authOffset     int // where the auth section starts in the raw packet
	authLen        int
}

// Decode decodes b into p and checks what can be checked without a session
// (RFC 5880 section 6.8.6, the steps before the session lookup): version,
// length, detect multiplier, multipoint, my discriminator. It returns a Reason.
func (p *Packet) Decode(b []byte) error {
	if len(b) < headerLen {
		return DropShort
	}
	if b[0]>>5 != Version {
		return DropVersion
	}
	length := int(b[3])
	auth := b[1]&0x04 != 0
	minLen := headerLen
	if auth {
		minLen = headerLen + 2
	}
	if length < minLen {
		return DropLength
	}
	if length > len(b) {
		return DropLength
	}
	*p = Packet{
		Diag: Diag(b[0] & 0x1f), State: State(b[1] >> 6),
		Poll: b[1]&0x20 != 0, Final: b[1]&0x10 != 0, CPI: b[1]&0x08 != 0, Auth: auth,
		Demand: b[1]&0x02 != 0, Multipoint: b[1]&0x01 != 0, DetectMult: b[2],
		MyDisc: binary.BigEndian.Uint32(b[4:]), YourDisc: binary.BigEndian.Uint32(b[8:]),
		DesiredMinTx: binary.BigEndian.Uint32(b[12:]), RequiredMinRx: binary.BigEndian.Uint32(b[16:]),
		RequiredEchoRx: binary.BigEndian.Uint32(b[20:]),
	}
	switch {
	case p.DetectMult == 0:
		return DropDetectMult
	case p.Multipoint:
		return DropMultipoint
	case p.MyDisc == 0:
		return DropMyDisc
	}
	if auth {
		return p.decodeAuth(b[headerLen:length])
	}
	if length != headerLen {
		return DropLength
	}
	return nil
}

func (p *Packet) decodeAuth(a []byte) error {
	if len(a) < 2 || int(a[1]) != len(a) {
		return DropAuth
	}
	p.AuthType, p.authOffset, p.authLen = AuthType(a[0]), headerLen, len(a)
	switch p.AuthType {
	case AuthSimple:
		if len(a) < 4 || len(a) > 3+maxPasswordLen {
			return DropAuth
		}
		p.AuthKeyID = a[2]
	case AuthKeyedSHA1, AuthMeticulousSHA1:
		if len(a) != sha1AuthLen {
			return DropAuth
		}
		p.AuthKeyID, p.AuthSeq = a[2], binary.BigEndian.Uint32(a[4:])
	default:
		return DropAuth
	}
	return nil
}

// Key is an authentication key of a session.
type Key struct {
	Type   AuthType
	ID     uint8
	Secret []byte // 1-16 bytes for simple, 1-20 for SHA1
}

// Encode writes p into buf (at least maxPacketLen bytes) and returns the
// packet's bytes. With a key it adds the auth section and, for SHA1, the
// digest over the whole packet (RFC 5880 section 6.7.4).
func (p *Packet) Encode(buf []byte, key *Key) []byte {
	b := buf[:headerLen]
	b[0] = Version<<5 | byte(p.Diag&0x1f)
	b[1] = byte(p.State)<<6 | flag(p.Poll, 0x20) | flag(p.Final, 0x10) | flag(p.CPI, 0x08) |
		flag(key != nil && key.Type != AuthNone, 0x04) | flag(p.Demand, 0x02)
	b[2] = p.DetectMult
	binary.BigEndian.PutUint32(b[4:], p.MyDisc)
	binary.BigEndian.PutUint32(b[8:], p.YourDisc)
	binary.BigEndian.PutUint32(b[12:], p.DesiredMinTx)
	binary.BigEndian.PutUint32(b[16:], p.RequiredMinRx)
	binary.BigEndian.PutUint32(b[20:], p.RequiredEchoRx)
	if key != nil {
		switch key.Type {
		case AuthSimple:
			b = append(b, byte(AuthSimple), byte(3+len(key.Secret)), key.ID)
			b = append(b, key.Secret...)
		case AuthKeyedSHA1, AuthMeticulousSHA1:
			b = append(b, byte(key.Type), sha1AuthLen, key.ID, 0, 0, 0, 0, 0)
			binary.BigEndian.PutUint32(b[headerLen+4:], p.AuthSeq)
			var k [20]byte
			copy(k[:], key.Secret)
			b = append(b, k[:]...)
			b[3] = byte(len(b))
			sum := sha1.Sum(b) //nolint:gosec // RFC 5880
			copy(b[headerLen+8:], sum[:])
		}
	}
	b[3] = byte(len(b))
	return b
}

// Authenticate checks the packet's auth section (raw is the packet Decode
// read) against key, without allocating; scratch must hold maxPacketLen bytes.
// The sequence number window is the session's job.
func (p *Packet) Authenticate(raw []byte, key *Key, scratch []byte) bool {
	if key == nil || !p.Auth || p.AuthType != key.Type || p.AuthKeyID != key.ID {
		return false
	}
	a := raw[p.authOffset : p.authOffset+p.authLen]
	switch key.Type {
	case AuthSimple:
		return subtle.ConstantTimeCompare(a[3:], key.Secret) == 1
	case AuthKeyedSHA1, AuthMeticulousSHA1:
		n := p.authOffset + p.authLen
		s := scratch[:n]
		copy(s, raw[:n])
		var k [20]byte
		copy(k[:], key.Secret)
		copy(s[p.authOffset+8:], k[:])
		sum := sha1.Sum(s) //nolint:gosec // RFC 5880
		return subtle.ConstantTimeCompare(sum[:], a[8:28]) == 1
	}
	return false
}

func flag(on bool, bit byte) byte {
	if on {
		return bit
	}
	return 0
}
