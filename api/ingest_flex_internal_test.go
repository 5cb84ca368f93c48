package api

import (
	"bytes"
	"encoding/json"
	"testing"
)

// flexStringByDecoder is flexString through encoding/json alone, as it
// read every value before plainJSONText.
func flexStringByDecoder(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err == nil {
		return n.String(), true
	}
	return "", false
}

// TestFlexString_ReadsAsTheDecoderDoes: the values read without a decoder
// (plain ASCII strings, numbers) come out as encoding/json gives them, and
// every other value still goes through it.
func TestFlexString_ReadsAsTheDecoderDoes(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		plain bool // read by plainJSONText
	}{
		{`"123456"`, true},
		{`"Nightly dbt build"`, true},
		{`""`, true},
		{`"2026-11-28T01:52:13Z"`, true},
		{`1234`, true},
		{`-7`, true},
		{`0`, true},
		{`1.5e3`, true},
		{`12345678901234567890123`, true},
		{`"tab\there"`, false},
		{`"quote \" inside"`, false},
		{`"caf\u00e9"`, false},
		{`"café"`, false},
		{`"\ud83d\ude00"`, false},
		{"\"\x7f\"", false},
		{`true`, false},
		{`{"a":1}`, false},
		{`[1]`, false},
		{` 12`, false},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			if _, ok := plainJSONText([]byte(tc.raw)); ok != tc.plain {
				t.Errorf("plainJSONText read it: %v, want %v", ok, tc.plain)
			}
			want, wantOK := flexStringByDecoder(json.RawMessage(tc.raw))
			got, err := flexString("data.x", json.RawMessage(tc.raw))
			if (err == nil) != wantOK || got != want {
				t.Errorf("flexString = %q, %v; encoding/json gives %q, %v", got, err, want, wantOK)
			}
		})
	}
}

// BenchmarkEventFromRequest: the Go cost of reading one event's request
// past its body's decoding: its ids, names and times (runDataFromJSON).
func BenchmarkEventFromRequest(b *testing.B) {
	var req ingestRequest
	if err := json.Unmarshal([]byte(sampleIngestBody), &req); err != nil {
		b.Fatal(err)
	}
	s := &Server{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.eventFromRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}
