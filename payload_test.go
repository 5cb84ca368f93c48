package webhooks_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
)

func sampleEnvelope(eventType string) webhooks.PayloadEnvelope {
	status, code := webhooks.DefaultRunStatus(eventType)
	return webhooks.PayloadEnvelope{
		AccountID: 1, SubscriptionID: "wsu_abc", EventID: "wev_def",
		Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600)),
		EventType: eventType, WebhookName: "My hook", ToolName: "dbt",
		Data: webhooks.RunData{
			JobID: "42", JobName: "Nightly", RunID: "7", EnvironmentID: "3", EnvironmentName: "Prod",
			ToolVersion: "1.9.0", ProjectName: "P", ProjectID: "5", RunStatus: status, RunStatusCode: code,
			RunStatusMessage: "m", RunReason: "r", RunStartedAt: "2026-01-02T02:00:00Z",
			RunFinishedAt: "2026-01-02T02:10:00Z", RunErroredAt: "2026-01-02T02:05:00Z",
		},
	}
}

func TestBuildPayload_ExactBytes(t *testing.T) {
	got := webhooks.BuildPayload(sampleEnvelope(webhooks.EventRunCompleted))
	want := `{"accountId":1,"webhooksID":"wsu_abc","eventId":"wev_def","timestamp":"2026-01-02T02:04:05.000000006Z",` +
		`"eventType":"job.run.completed","webhookName":"My hook","data":{"jobId":"42","jobName":"Nightly","runId":"7",` +
		`"environmentId":"3","environmentName":"Prod","dbtVersion":"1.9.0","projectName":"P","projectId":"5",` +
		`"runStatus":"Success","runStatusCode":10,"runStatusMessage":"m","runReason":"r",` +
		`"runStartedAt":"2026-01-02T02:00:00Z","runFinishedAt":"2026-01-02T02:10:00Z"}}`
	if string(got) != want {
		t.Errorf("payload\n got %s\nwant %s", got, want)
	}
}

func TestBuildPayload_EventSpecificFields(t *testing.T) {
	tests := []struct {
		eventType string
		want      []string
		absent    []string
	}{
		{webhooks.EventRunStarted, nil, []string{"runFinishedAt", "runErroredAt"}},
		{webhooks.EventRunCompleted, []string{"runFinishedAt"}, []string{"runErroredAt"}},
		{webhooks.EventRunErrored, []string{"runErroredAt"}, []string{"runFinishedAt"}},
	}
	for _, tt := range tests {
		t.Run(tt.eventType, func(t *testing.T) {
			b := webhooks.BuildPayload(sampleEnvelope(tt.eventType))
			var p struct{ Data map[string]any }
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.want {
				if _, ok := p.Data[k]; !ok {
					t.Errorf("data.%s missing", k)
				}
			}
			for _, k := range tt.absent {
				if _, ok := p.Data[k]; ok {
					t.Errorf("data.%s must be absent", k)
				}
			}
		})
	}
}

func TestBuildPayload_ToolNameConfigurable(t *testing.T) {
	e := sampleEnvelope(webhooks.EventRunStarted)
	e.ToolName = "sqlmesh"
	b := webhooks.BuildPayload(e)
	if !strings.Contains(string(b), `"sqlmeshVersion":"1.9.0"`) || strings.Contains(string(b), "dbtVersion") {
		t.Errorf("payload = %s", b)
	}
}

func TestSign_MatchesKnownVector(t *testing.T) {
	// RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
	got := webhooks.Sign("Jefe", []byte("what do ya want for nothing?"))
	want := "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	if got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	if !webhooks.VerifySignature("Jefe", []byte("what do ya want for nothing?"), want) {
		t.Error("VerifySignature rejects a good signature")
	}
	if webhooks.VerifySignature("Jefe", []byte("what do ya want for nothing!"), want) {
		t.Error("VerifySignature accepts a tampered body")
	}
}

func TestValidateEvent(t *testing.T) {
	ok := sampleEnvelope(webhooks.EventRunCompleted).Data
	tests := []struct {
		name      string
		eventType string
		mutate    func(*webhooks.RunData)
		wantField string
	}{
		{"Valid", webhooks.EventRunCompleted, nil, ""},
		{"UnknownType", "job.run.paused", nil, "eventType"},
		{"NoJob", webhooks.EventRunCompleted, func(d *webhooks.RunData) { d.JobID = "" }, "data.jobId"},
		{"NoRun", webhooks.EventRunStarted, func(d *webhooks.RunData) { d.RunID = "" }, "data.runId"},
		{"CompletedNeedsFinish", webhooks.EventRunCompleted, func(d *webhooks.RunData) { d.RunFinishedAt = "" }, "data.runFinishedAt"},
		{"ErroredNeedsErroredAt", webhooks.EventRunErrored, func(d *webhooks.RunData) { d.RunErroredAt = "" }, "data.runErroredAt"},
		{"BadTime", webhooks.EventRunStarted, func(d *webhooks.RunData) { d.RunStartedAt = "2026-01-02 03:04" }, "data.runStartedAt"},
		{"JobIDNUL", webhooks.EventRunCompleted, func(d *webhooks.RunData) { d.JobID = "4\x002" }, "data.jobId"},
		{"RunIDInvalidUTF8", webhooks.EventRunCompleted, func(d *webhooks.RunData) { d.RunID = "7\xff" }, "data.runId"},
		{"JobNameNUL", webhooks.EventRunCompleted, func(d *webhooks.RunData) { d.JobName = "a\x00" }, "data.jobName"},
		{"ToolVersionSurrogateBytes", webhooks.EventRunCompleted, func(d *webhooks.RunData) { d.ToolVersion = "1.\xed\xa0\x80" }, "data.toolVersion"},
		{"RunReasonNUL", webhooks.EventRunCompleted, func(d *webhooks.RunData) { d.RunReason = "\x00" }, "data.runReason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ok
			if tt.mutate != nil {
				tt.mutate(&d)
			}
			err := webhooks.ValidateEvent(tt.eventType, d)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var e *webhooks.Error
			if !asError(err, &e) || e.Field != tt.wantField {
				t.Errorf("error = %v, want one naming %s", err, tt.wantField)
			}
		})
	}
}

func TestStorableText(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want bool
	}{
		{"Empty", "", true},
		{"ASCII", "run-42", true},
		{"MultiByte", "café ☕ 𝄞", true},
		{"ReplacementCharacterSent", "\uFFFD", true},
		{"ControlCharactersOtherThanNUL", "a\tb\nc\x01", true},
		{"NUL", "4\x002", false},
		{"OnlyNUL", "\x00", false},
		{"InvalidByte", "caf\xe9", false},
		{"TruncatedRune", "\xc3", false},
		{"EncodedSurrogate", "\xed\xa0\x80", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := webhooks.StorableText(tt.s); got != tt.want {
				t.Errorf("StorableText(%q) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

func asError(err error, target **webhooks.Error) bool {
	e, ok := err.(*webhooks.Error)
	if ok {
		*target = e
	}
	return ok
}

func TestNormalizeRunTime(t *testing.T) {
	for in, want := range map[string]string{
		"2026-01-02T03:04:05Z":      "2026-01-02T03:04:05Z",
		"2026-01-02T03:04:05.999Z":  "2026-01-02T03:04:05Z",
		"2026-01-02T04:04:05+01:00": "2026-01-02T03:04:05Z",
		"":                          "",
	} {
		got, err := webhooks.NormalizeRunTime(in)
		if err != nil || got != want {
			t.Errorf("NormalizeRunTime(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := webhooks.NormalizeRunTime("yesterday"); err == nil {
		t.Error("NormalizeRunTime accepts garbage")
	}
}
