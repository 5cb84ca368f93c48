package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// sampleIngestBody is one event as the job runner sends it (spec 2.2's data).
const sampleIngestBody = `{"accountId":1234,"eventType":"job.run.completed","eventId":"wev_2Yc8sZ4mHn6Jk8Lp0QrSt2UvWx",` +
	`"data":{"jobId":"123456","jobName":"Nightly dbt build","runId":"98765432","environmentId":"2345",` +
	`"environmentName":"Production","toolVersion":"1.8.2","projectName":"Analytics","projectId":"3456",` +
	`"runStatus":"Success","runStatusCode":10,"runStatusMessage":"Success","runReason":"Kicked off by the scheduler",` +
	`"runStartedAt":"2026-11-28T01:50:00Z","runFinishedAt":"2026-11-28T01:52:13Z"}}`

// BenchmarkDecodeIngestRequest: the Go cost of reading one event's request
// body (the path a producer hits most; docs/performance.md): the
// handler's one pass, and decodeJSON, which reads every other body.
func BenchmarkDecodeIngestRequest(b *testing.B) {
	benchmarkDecode(b, []byte(sampleIngestBody), decodeIngestRequest, func(ingestRequest) int { return 1 })
}

// BenchmarkDecodeIngestBatch: reading a batch of ten events (POST
// /internal/v1/job-run-events/batch): the handler's one pass, and
// decodeJSON, which reads every other batch.
func BenchmarkDecodeIngestBatch(b *testing.B) {
	body := []byte(`{"events":[` + strings.Repeat(sampleIngestBody+",", 9) + sampleIngestBody + `]}`)
	benchmarkDecode(b, body, decodeIngestBatch, func(r ingestBatchRequest) int { return len(r.Events) })
}

// benchmarkDecode reads body with the handler's decode and with
// decodeJSON, each read checked to give 1 or 10 events (events).
func benchmarkDecode[T any](b *testing.B, body []byte, decode func(*gin.Context, *T) error, events func(T) int) {
	gin.SetMode(gin.ReleaseMode)
	want := strings.Count(string(body), `"eventId"`)
	for _, bc := range []struct {
		name   string
		decode func(*gin.Context, *T) error
	}{
		{"one pass", decode},
		{"decodeJSON", func(c *gin.Context, r *T) error { return decodeJSON(c, r, ignoreUnknown) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				c, _ := gin.CreateTestContext(httptest.NewRecorder())
				c.Request = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
				var req T
				if err := bc.decode(c, &req); err != nil || events(req) != want {
					b.Fatalf("%d events, want %d: %v", events(req), want, err)
				}
			}
		})
	}
}
