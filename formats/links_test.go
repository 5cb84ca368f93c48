package formats_test

import (
	"strings"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/formats"
)

func TestRunLinks_URL(t *testing.T) {
	const tmpl = "https://ci.example.com/deploy/{accountId}/projects/{projectId}/runs/{runId}?env={environmentId}&job={jobId}"
	tests := []struct {
		name, template string
		edit           func(*webhooks.PayloadEnvelope)
		want           string
	}{
		{"NoTemplate", "", nil, ""},
		{"Filled", tmpl, nil, "https://ci.example.com/deploy/7/projects/5/runs/9001?env=3&job=42"},
		{"ValuesAreEscaped", tmpl, func(e *webhooks.PayloadEnvelope) { e.Data.RunID = "a/b?c=<d>|e f" },
			"https://ci.example.com/deploy/7/projects/5/runs/a%2Fb%3Fc%3D%3Cd%3E%7Ce%20f?env=3&job=42"},
		{"MissingValue", tmpl, func(e *webhooks.PayloadEnvelope) { e.Data.ProjectID = "" }, ""},
		{"DotSegment", tmpl, func(e *webhooks.PayloadEnvelope) { e.Data.RunID = ".." }, ""},
		{"TooLong", tmpl, func(e *webhooks.PayloadEnvelope) { e.Data.RunID = strings.Repeat("%", 700) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := event(webhooks.EventRunErrored)
			if tt.edit != nil {
				tt.edit(&e)
			}
			if got := (formats.RunLinks{Template: tt.template}).URL(e); got != tt.want {
				t.Fatalf("URL = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateRunURLTemplate(t *testing.T) {
	tests := []struct {
		template string
		wantErr  bool
	}{
		{"", false},
		{"https://ci.example.com/runs/{runId}", false},
		{"http://ci.internal:8080/{accountId}/{projectId}/{environmentId}/{jobId}/{runId}", false},
		{"https://ci.example.com/runs/{run}", true},
		{"/runs/{runId}", true},
		{"ftp://ci.example.com/{runId}", true},
		{"https:///{runId}", true},
		{"https://ci.example.com/%zz/{runId}", true},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			if err := formats.ValidateRunURLTemplate(tt.template); (err != nil) != tt.wantErr {
				t.Fatalf("ValidateRunURLTemplate(%q) = %v, want error %v", tt.template, err, tt.wantErr)
			}
		})
	}
}
