package webhooks

import (
	"encoding/json"
	"testing"
	"time"
)

// TestAppendJSONString_AsEncodingJSON: every string is written as
// encoding/json writes it, byte for byte, the quoted fast path and the
// fallback alike, so a body built now has the bytes it had before.
func TestAppendJSONString_AsEncodingJSON(t *testing.T) {
	for _, s := range appendJSONStringSeeds {
		want, _ := json.Marshal(s)
		if got := appendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("appendJSONString(%q) = %s, want x%s", s, got, want)
		}
	}
}

var appendJSONStringSeeds = []string{
	"", "plain", "job 42 / run 7", "dbtVersion", "1.8.0", "2026-11-26T09:30:00Z",
	`quote " inside`, `back\slash`, "<script>&</script>", "tab\tnew\nline\r", "\x00\x01\x1f", "\x7f",
	"café", "日本語", "line\u2028sep\u2029", "\xff\xfe invalid", "emoji 😀", "'single'", "a~z{}[]|",
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range appendJSONStringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func BenchmarkBuildPayload(b *testing.B) {
	e := PayloadEnvelope{AccountID: 43, SubscriptionID: "wsu_2b3c4d5e6f7g8h9j0k1m2n3p4q", EventID: "wev_2b3c4d5e6f7g8h9j0k1m2n3p4q",
		Timestamp: time.Date(2026, 11, 26, 9, 0, 0, 123456789, time.UTC), EventType: EventRunCompleted, WebhookName: "Nightly runs",
		Data: RunData{JobID: "42", JobName: "Nightly", RunID: "7001", EnvironmentID: "3", EnvironmentName: "Production",
			ToolVersion: "1.8.0", ProjectName: "Analytics", ProjectID: "9", RunStatus: "Success", RunStatusCode: 10,
			RunStatusMessage: "None", RunReason: "Kicked off by the scheduler", RunStartedAt: "2026-11-26T08:59:00Z",
			RunFinishedAt: "2026-11-26T09:00:00Z"}, ToolName: "dbt"}
	b.ReportAllocs()
	for b.Loop() {
		if len(BuildPayload(e)) == 0 {
			b.Fatal("empty payload")
		}
	}
}
