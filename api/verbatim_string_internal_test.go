package api

import (
	"encoding/json"
	"testing"
)

func TestVerbatimString_KeepsWhatWasSent(t *testing.T) {
	tests := []struct {
		name string
		json string
		want string
	}{
		{"Plain", `"Run alerts"`, "Run alerts"},
		{"Escapes", `"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t"},
		{"UnicodeEscape", `"caf\u00e9 \u20AC"`, "café €"},
		{"SurrogatePair", `"\ud83d\ude00"`, "😀"},
		{"ReplacementCharacterSent", `"a\ufffd b` + "\uFFFD" + `"`, "a\uFFFD b\uFFFD"},
		{"InvalidUTF8Kept", "\"caf\xe9\"", "caf\xe9"},
		{"InvalidUTF8KeptBesideEscape", "\"\xff\\n\xfe\"", "\xff\n\xfe"},
		{"LoneHighSurrogate", `"a\ud800b"`, "a\xed\xa0\x80b"},
		{"LoneLowSurrogate", `"\udc00"`, "\xed\xb0\x80"},
		{"HighSurrogateThenNonSurrogate", `"\ud800\u0041"`, "\xed\xa0\x80A"},
		{"Empty", `""`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s verbatimString
			if err := json.Unmarshal([]byte(tt.json), &s); err != nil {
				t.Fatalf("Unmarshal(%q): %v", tt.json, err)
			}
			if string(s) != tt.want {
				t.Fatalf("Unmarshal(%q) = %q, want %q", tt.json, s, tt.want)
			}
		})
	}
}

func TestVerbatimString_NonStringIsTypeError(t *testing.T) {
	for _, body := range []string{`{"s": 5}`, `{"s": true}`, `{"s": ["x"]}`, `{"s": {}}`} {
		var v struct {
			S *verbatimString `json:"s"`
		}
		err := json.Unmarshal([]byte(body), &v)
		typeErr, ok := err.(*json.UnmarshalTypeError)
		if !ok || typeErr.Field != "s" || typeErr.Type.String() != "string" {
			t.Errorf("Unmarshal(%s) = %v, want a type error naming field s", body, err)
		}
	}
}
