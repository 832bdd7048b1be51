package bfd

import (
	"errors"
	"testing"
)

func goodPacket() []byte {
	p := Packet{State: Up, DetectMult: 3, MyDisc: 7, YourDisc: 9, DesiredMinTx: 50000, RequiredMinRx: 50000}
	var buf [maxPacketLen]byte
	return append([]byte(nil), p.Encode(buf[:], nil)...)
}

func TestDecodeChecksInOrder(t *testing.T) {
	mut := func(f func(b []byte) []byte) []byte { return f(goodPacket()) }
	tests := []struct {
		name string
		b    []byte
		want Reason
	}{
		{"short", goodPacket()[:23], DropShort},
		{"version 0", mut(func(b []byte) []byte { b[0] &= 0x1f; return b }), DropVersion},
		{"length below 24", mut(func(b []byte) []byte { b[3] = 20; return b }), DropLength},
		{"length beyond the payload", mut(func(b []byte) []byte { b[3] = 40; return b }), DropLength},
		{"A bit, length 24", mut(func(b []byte) []byte { b[1] |= 0x04; return b }), DropLength},
		{"detect mult 0", mut(func(b []byte) []byte { b[2] = 0; return b }), DropDetectMult},
		{"multipoint", mut(func(b []byte) []byte { b[1] |= 0x01; return b }), DropMultipoint},
		{"my discriminator 0", mut(func(b []byte) []byte { copy(b[4:8], []byte{0, 0, 0, 0}); return b }), DropMyDisc},
		{"auth length mismatch", mut(func(b []byte) []byte {
			b[1] |= 0x04
			b[3] = 28
			return append(b, 1, 9, 1, 'x')
		}), DropAuth},
		{"unknown auth type", mut(func(b []byte) []byte {
			b[1] |= 0x04
			b[3] = 28
			return append(b, 2, 4, 1, 'x')
		}), DropAuth},
	}
	for _, tt := range tests {
		var p Packet
		if err := p.Decode(tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
	var p Packet
	if err := p.Decode(append(goodPacket(), 0, 0)); err != nil {
		t.Errorf("bytes past Length must be ignored (RFC 5880 6.8.6): %v", err)
	}
	if err := p.Decode(goodPacket()); err != nil || p.State != Up || p.MyDisc != 7 || p.YourDisc != 9 || p.RequiredEchoRx != 0 {
		t.Errorf("good packet: %v %+v", err, p)
	}
}

func TestEncodeAuthSections(t *testing.T) {
	for _, k := range []*Key{{Type: AuthSimple, ID: 1, Secret: []byte("pw")}, {Type: AuthKeyedSHA1, ID: 2, Secret: []byte("k")},
		{Type: AuthMeticulousSHA1, ID: 3, Secret: []byte("01234567890123456789")}} {
		p := Packet{State: Down, DetectMult: 3, MyDisc: 1, DesiredMinTx: 1e6, RequiredMinRx: 50000, AuthSeq: 42}
		var buf, scratch [maxPacketLen]byte
		raw := p.Encode(buf[:], k)
		var q Packet
		if err := q.Decode(raw); err != nil || !q.Auth || q.AuthType != k.Type || q.AuthKeyID != k.ID {
			t.Fatalf("%v: %v %+v", k.Type, err, q)
		}
		if k.Type != AuthSimple && (q.AuthSeq != 42 || len(raw) != 52) {
			t.Errorf("%v: seq %d length %d", k.Type, q.AuthSeq, len(raw))
		}
		if !q.Authenticate(raw, k, scratch[:]) {
			t.Errorf("%v: own packet does not authenticate", k.Type)
		}
		raw[10] ^= 1 // any change breaks a SHA1 digest
		if k.Type != AuthSimple && q.Authenticate(raw, k, scratch[:]) {
			t.Errorf("%v: tampered packet authenticates", k.Type)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(goodPacket())
	var buf [maxPacketLen]byte
	p := Packet{State: Init, DetectMult: 3, MyDisc: 1, AuthSeq: 5}
	f.Add(append([]byte(nil), p.Encode(buf[:], &Key{Type: AuthMeticulousSHA1, ID: 1, Secret: []byte("x")})...))
	f.Add(append([]byte(nil), p.Encode(buf[:], &Key{Type: AuthSimple, ID: 1, Secret: []byte("x")})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Packet
		err := p.Decode(b)
		if err != nil {
			var r Reason
			if !errors.As(err, &r) {
				t.Fatalf("error %v is not a drop reason", err)
			}
			return
		}
		if p.DetectMult == 0 || p.MyDisc == 0 || p.Multipoint {
			t.Fatalf("accepted %+v", p)
		}
		var scratch [maxPacketLen]byte
		_ = p.Authenticate(b, &Key{Type: p.AuthType, ID: p.AuthKeyID, Secret: []byte("k")}, scratch[:])
		var out [maxPacketLen]byte
		var again Packet
		if err := again.Decode(p.Encode(out[:], nil)); err != nil && !p.Auth {
			t.Fatalf("re-encoding %+v: %v", p, err)
		}
	})
}
