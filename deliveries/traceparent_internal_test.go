package deliveries

import (
	"bytes"
	"testing"
)

func TestPackTraceParent(t *testing.T) {
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name, in string
		want     []byte // nil: kept as nothing
	}{
		{"Valid", valid, []byte{0x00,
			0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36,
			0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7, 0x01}},
		{"Untraced", "", nil},
		{"UpperCase", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", nil},
		{"LaterVersion", "01" + valid[2:], nil},
		{"LaterVersionWithMore", "01" + valid[2:] + "-xx", nil},
		{"NotHex", "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01", nil},
		{"DashMoved", "00-4bf92f3577b34da6a3ce929d0e0e4736000-f067aa0ba902b7-01", nil},
		{"Short", valid[:54], nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := packTraceParent(tc.in)
			if got == nil {
				t.Fatal("nil: the statement's array needs an empty value")
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("packTraceParent(%q) = %x, want %x", tc.in, got, tc.want)
			}
			wantBack := ""
			if tc.want != nil {
				wantBack = tc.in
			}
			if back := unpackTraceParent(got); back != wantBack {
				t.Errorf("unpackTraceParent = %q, want %q", back, wantBack)
			}
		})
	}
}
