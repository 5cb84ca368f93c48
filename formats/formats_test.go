package formats_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/formats"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    formats.Format
		wantErr bool
	}{
		{"", formats.Standard, false},
		{"standard", formats.Standard, false},
		{"slack", formats.Slack, false},
		{"teams", formats.Teams, false},
		{"pagerduty", formats.PagerDuty, false},
		{"Slack", "", true},
		{"discord", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := formats.Parse(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("Parse(%q) = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestBuild_StandardIsTheSpecBody(t *testing.T) {
	for _, et := range webhooks.EventTypes {
		e := event(et)
		got, err := formats.Build(formats.Standard, formats.Input{Envelope: e, RunURL: runURL})
		if err != nil || !bytes.Equal(got, webhooks.BuildPayload(e)) {
			t.Fatalf("%s: standard body differs from the spec's (err %v):\n%s", et, err, got)
		}
	}
}

// TestBuild_IsDeterministic: retries and workflow replays send the bytes
// the first attempt built, so building again must give them.
func TestBuild_IsDeterministic(t *testing.T) {
	for _, f := range formats.All {
		for _, et := range webhooks.EventTypes {
			for _, h := range hostile {
				in := formats.Input{Envelope: event(et, h.edit), RunURL: runURL}
				first, err1 := formats.Build(f, in)
				second, err2 := formats.Build(f, in)
				if !errors.Is(err1, err2) || !bytes.Equal(first, second) {
					t.Fatalf("%s %s %s: two builds differ", f, et, h.name)
				}
				if err1 == nil && (!json.Valid(first) || !utf8.Valid(first)) {
					t.Fatalf("%s %s %s: not valid JSON in UTF-8:\n%q", f, et, h.name, first)
				}
			}
		}
	}
}

func TestBuild_UnknownFormat(t *testing.T) {
	if _, err := formats.Build("discord", formats.Input{Envelope: event(webhooks.EventRunErrored)}); err == nil {
		t.Fatal("an unknown format built a body")
	}
}
