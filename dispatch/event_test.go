package dispatch_test

import (
	"errors"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/dispatch"
)

func TestNewEvent_RefusesTextThatCannotBeStored(t *testing.T) {
	ok := webhooks.RunData{JobID: "4", RunID: "2", RunStartedAt: "2026-01-02T03:04:05Z"}
	tests := []struct {
		name      string
		eventID   string
		mutate    func(*webhooks.RunData)
		wantField string // "" for accepted
	}{
		{"Valid", "run-2-started", nil, ""},
		{"EventIDMultiByte", "ré-2", nil, ""},
		{"EventIDNUL", "run\x002", nil, "eventId"},
		{"EventIDInvalidUTF8", "run\xff", nil, "eventId"},
		{"JobIDNUL", "", func(d *webhooks.RunData) { d.JobID = "4\x002" }, "data.jobId"},
		{"RunIDInvalidUTF8", "", func(d *webhooks.RunData) { d.RunID = "\xc3" }, "data.runId"},
		{"EnvironmentNameNUL", "", func(d *webhooks.RunData) { d.EnvironmentName = "prod\x00" }, "data.environmentName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ok
			if tt.mutate != nil {
				tt.mutate(&d)
			}
			_, err := dispatch.NewEvent(1, webhooks.EventRunStarted, tt.eventID, d)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var e *webhooks.Error
			if !errors.As(err, &e) || e.Code != webhooks.EINVALID || e.Field != tt.wantField {
				t.Errorf("error = %v, want an EINVALID naming %s", err, tt.wantField)
			}
		})
	}
}
