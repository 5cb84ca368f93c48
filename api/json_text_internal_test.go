package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
)

func TestJSONTextFault(t *testing.T) {
	tests := []struct {
		name string
		json string
		want string // a substring of the fault; "" for none
	}{
		{"Plain", `"run-42"`, ""},
		{"Number", `42`, ""},
		{"Null", `null`, ""},
		{"Empty", `""`, ""},
		{"Escapes", `"a\"b\\c\/d\b\f\n\r\t"`, ""},
		{"UnicodeEscape", `"caf\u00e9 \u20AC"`, ""},
		{"MultiByte", `"café ☕ 𝄞"`, ""},
		{"SurrogatePair", `"\ud83d\ude00"`, ""},
		{"SurrogatePairUpperCase", `"\uD83D\uDE00"`, ""},
		{"ReplacementCharacterSent", `"\ufffd` + "\uFFFD" + `"`, ""},
		{"ControlEscapeOtherThanNUL", `"\u0001\u001f"`, ""},
		{"EscapedBackslashBeforeU0000", `"\\u0000"`, ""},
		{"NULEscape", `"4\u00002"`, "NUL"},
		{"NULEscapeAlone", `"\u0000"`, "NUL"},
		{"NULEscapeAfterPair", `"\ud83d\ude00\u0000"`, "NUL"},
		{"InvalidByte", "\"caf\xe9\"", "invalid UTF-8"},
		{"TruncatedRune", "\"\xc3\"", "invalid UTF-8"},
		{"EncodedSurrogateBytes", "\"\xed\xa0\x80\"", "invalid UTF-8"},
		{"LoneHighSurrogate", `"a\ud800b"`, `lone surrogate (\ud800)`},
		{"LoneHighSurrogateAtEnd", `"\udbff"`, `lone surrogate (\udbff)`},
		{"LoneLowSurrogate", `"\udc00"`, `lone surrogate (\udc00)`},
		{"HighThenNonSurrogate", `"\ud800\u0041"`, "lone surrogate"},
		{"HighThenHigh", `"\ud800\ud800"`, "lone surrogate"},
		{"LowThenHigh", `"\ude00\ud83d"`, "lone surrogate"},
		{"InsideObject", `{"a":{"b":["x","\u0000"]}}`, "NUL"},
		{"InObjectKey", `{"k\u0000":1}`, "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := jsonTextFault([]byte(tt.json))
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("jsonTextFault(%q) = %q, want %q", tt.json, got, tt.want)
			}
		})
	}
}

func TestEventData_NamesTheMemberAtFault(t *testing.T) {
	tests := []struct {
		name      string
		json      string
		wantField string // "" for no fault
	}{
		{"Clean", `{"jobId":"4","runId":2,"extra":{"a":["b"]}}`, ""},
		{"Empty", `{}`, ""},
		{"CleanEscapes", `{"a\"b":"\\\"\ud83d\ude00 caf\u00e9","c":"\\u0000"}`, ""},
		{"ValueNUL", `{"runId":"1","jobId":"4\u00002"}`, "data.jobId"},
		{"ValueInvalidUTF8", "{\"jobName\":\"caf\xe9\"}", "data.jobName"},
		{"ValueLoneSurrogate", `{"runReason":"x\udc00"}`, "data.runReason"},
		{"UnknownMemberValue", `{"jobId":"4","extra":"\u0000"}`, "data.extra"},
		{"NestedValue", `{"extra":{"deep":["\ud800"]}}`, "data.extra"},
		{"FirstOfTwo", `{"runId":"\u0000","jobId":"\u0000"}`, "data.runId"},
		{"NameNUL", `{"job\u0000Id":"4"}`, "data"},
		{"NameLoneSurrogate", `{"jobId":"4","\ud800":"x"}`, "data"},
		{"NameInvalidUTF8", "{\"\xff\":\"x\"}", "data"},
		{"WhitespaceAround", "{ \"jobId\" : \"4\" ,\n \"runId\" : \"\\u0000\" }", "data.runId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d eventData
			if err := json.Unmarshal([]byte(tt.json), &d); err != nil {
				t.Fatalf("Unmarshal(%q): %v", tt.json, err)
			}
			if d.members == nil {
				t.Fatalf("no members decoded from %q", tt.json)
			}
			if tt.wantField == "" {
				if d.fault != nil {
					t.Fatalf("fault %v, want none", d.fault)
				}
				return
			}
			var e *webhooks.Error
			if !errors.As(d.fault, &e) || e.Code != webhooks.EINVALID || e.Field != tt.wantField {
				t.Errorf("fault = %v, want an EINVALID naming %s", d.fault, tt.wantField)
			}
		})
	}
	t.Run("NullIsNoObject", func(t *testing.T) {
		var d eventData
		if err := json.Unmarshal([]byte(`null`), &d); err != nil || d.members != nil || d.fault != nil {
			t.Errorf("null gave members %v, fault %v, err %v; want nothing", d.members, d.fault, err)
		}
	})
	t.Run("NotAnObjectIsATypeError", func(t *testing.T) {
		var d eventData
		var typeErr *json.UnmarshalTypeError
		if err := json.Unmarshal([]byte(` "x"`), &d); !errors.As(err, &typeErr) || jsonTypeName(typeErr.Type.String()) != "object" {
			t.Errorf("a string gave %v, want a type error", err)
		}
	})
}
