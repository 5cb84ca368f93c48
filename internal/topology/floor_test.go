package topology_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/topology"
)

// TestMain lets MeasureFloor start this test binary as its floor server.
func TestMain(m *testing.M) {
	topology.ServeFloorIfAsked()
	os.Exit(m.Run())
}

// BenchmarkTopology_Floor measures the floor of an ingestion request on
// this machine: what a bare Go HTTP server (topology.FloorHandler) costs a
// request at TOPOLOGY_RATE requests/s (default 300), one event a request
// from 32 senders as the topology's paced phase sends them, for
// TOPOLOGY_RATE × 10 requests; answering at once, and after 20 ms, the
// API's answer under its group commit (INGEST_LINGER's default). Read the
// API's CPU per event at the same rate against it (docs/performance.md,
// "The floor of a request"). Run with -benchtime=1x.
func BenchmarkTopology_Floor(b *testing.B) {
	rate := envInt("TOPOLOGY_RATE", 300)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, delay := range []time.Duration{0, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("rate=%d/answer-after=%v", rate, delay), func(b *testing.B) {
			f, err := topology.MeasureFloor(b.Context(), exe, delay, rate*10, 32, time.Second/time.Duration(rate))
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("floor at %d requests/s, answering after %v: %d requests, server CPU %.3f ms and %.1f context switches a request; answered in p50 %v p99 %v",
				rate, delay, f.Requests, f.CPUMsPerRequest(), f.SwitchesPerRequest(), f.Answers.AnswerP50, f.Answers.AnswerP99)
			b.ReportMetric(f.CPUMsPerRequest(), "cpu-ms/request@rate")
			b.ReportMetric(f.SwitchesPerRequest(), "switches/request@rate")
			b.ReportMetric(float64(f.Answers.AnswerP50.Microseconds())/1000, "answer-p50-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func TestFloorHandler(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantID     string
	}{
		{name: "an ingestion request", body: `{"accountId":1,"eventType":"job.run.completed","eventId":"e-1","data":{"jobId":"42"}}`,
			wantStatus: http.StatusAccepted, wantID: "e-1"},
		{name: "no event id", body: `{"accountId":1,"data":{"jobId":"42"}}`, wantStatus: http.StatusBadRequest},
		{name: "no data", body: `{"eventId":"e-1"}`, wantStatus: http.StatusBadRequest},
		{name: "not JSON", body: `eventId=e-1`, wantStatus: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			topology.FloorHandler(0).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/internal/v1/job-run-events", strings.NewReader(tt.body)))
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d (%s)", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantID == "" {
				return
			}
			var out struct {
				Data struct {
					EventID string `json:"eventId"`
				} `json:"data"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Data.EventID != tt.wantID {
				t.Fatalf("body %s (%v), want eventId %q", w.Body, err, tt.wantID)
			}
		})
	}
}

// MeasureFloor starts this binary as the floor server, sends it every
// event and counts what the server used.
func TestMeasureFloor(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	f, err := topology.MeasureFloor(t.Context(), exe, 5*time.Millisecond, 60, 4, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Sixty requests, each read, answered and waited for by the server's
	// threads, switch them off their CPUs many times; their CPU may still
	// be under one clock tick, so it is not asserted.
	if f.Requests != 60 || f.Switches < 60 {
		t.Fatalf("floor %+v: want 60 requests and at least a context switch each", f)
	}
	// Paced at 2 ms, 60 events take at least 118 ms; each answer at least 5 ms.
	if took := time.Since(start); took < 118*time.Millisecond {
		t.Fatalf("60 events paced 2 ms apart took %v", took)
	}
	if f.Answers.AnswerP50 < 5*time.Millisecond {
		t.Fatalf("answers' p50 %v, want at least the server's 5 ms delay", f.Answers.AnswerP50)
	}
}
