package topology_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/topology"
)

// fakeService accepts events on the ingestion endpoint (the first request
// gets a 503, as an overloaded API answers) and delivers each, signed, to
// every webhook: the HTTP contract the workload relies on, without Temporal.
func fakeService(t *testing.T, receiverURL string, webhooks map[string]string) *httptest.Server {
	srv, _ := fakeServiceCounting(t, receiverURL, webhooks)
	return srv
}

// fakeServiceCounting is fakeService, which also takes the batch endpoint,
// and a count of the batch requests it accepted.
func fakeServiceCounting(t *testing.T, receiverURL string, webhooks map[string]string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var requests, batches atomic.Int64
	deliver := func(eventID string) {
		for id, secret := range webhooks {
			body, _ := json.Marshal(map[string]string{"webhooksID": id, "eventId": eventID})
			mac := hmac.New(sha256.New, []byte(secret))
			mac.Write(body)
			req, _ := http.NewRequest(http.MethodPost, receiverURL, bytes.NewReader(body))
			req.Header.Set("Authorization", hex.EncodeToString(mac.Sum(nil)))
			req.Header.Set("Webhook-Id", "wdl_"+id+"_"+eventID)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	type event struct {
		EventID string `json:"eventId"`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		batch := r.URL.Path == "/internal/v1/job-run-events/batch"
		if (!batch && r.URL.Path != "/internal/v1/job-run-events") || r.Header.Get("Authorization") != "Bearer internal" {
			http.Error(w, "unexpected request", http.StatusNotFound)
			return
		}
		if requests.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var in struct {
			event
			Events []event `json:"events"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		if !batch {
			in.Events = []event{in.event}
		}
		ids := make([]string, len(in.Events))
		results := make([]map[string]any, len(in.Events))
		for i, e := range in.Events {
			ids[i] = "evt_" + e.EventID
			results[i] = map[string]any{"index": i, "eventId": ids[i]}
		}
		w.WriteHeader(http.StatusAccepted)
		if batch {
			batches.Add(1)
			_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"results": results}})
		} else {
			_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]string{"eventId": ids[0]}})
		}
		go func() {
			for _, id := range ids {
				deliver(id)
			}
		}()
	}))
	t.Cleanup(srv.Close)
	return srv, &batches
}

// oneWebhook starts a receiver that trusts webhook wh_1 (secret s1) and a
// fake service that delivers every event to it (fakeServiceCounting), for
// a test whose ctx ends with it or after a minute.
func oneWebhook(t *testing.T) (context.Context, *topology.Receiver, *httptest.Server, *atomic.Int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	recv, err := topology.StartReceiver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recv.Trust("wh_1", "s1", recv.URL)
	srv, batches := fakeServiceCounting(t, recv.URL, map[string]string{"wh_1": "s1"})
	return ctx, recv, srv, batches
}

// With Batch, Send posts that many events a request to the batch endpoint
// (the last request the rest), and every event is accepted and arrives.
func TestWorkload_SendsBatches(t *testing.T) {
	ctx, recv, srv, batches := oneWebhook(t)
	events := make([]topology.Event, 10)
	for i := range events {
		events[i] = topology.Event{AccountID: 1, JobID: 42, Webhooks: []string{"wh_1"}}
	}
	api := topology.API{BaseURL: srv.URL, InternalToken: "internal", HTTP: srv.Client(), Batch: 4}
	start := time.Now()
	if err := api.Send(ctx, recv, "batch", events, 2, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Requests of events 0-3, 4-7 and 8-9, paced by their first event: the
	// last no earlier than 80 ms after the start.
	if took := time.Since(start); took < 80*time.Millisecond {
		t.Fatalf("sent in %v, want the last batch 80 ms after the start", took)
	}
	if n := batches.Load(); n != 3 {
		t.Fatalf("%d batch requests, want 3 (4, 4 and 2 events)", n)
	}
	if err := recv.WaitExpected(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := recv.Stats(); st.Unique != 10 || st.Duplicates != 0 {
		t.Fatalf("arrivals %+v, want the 10 events once each", st)
	}
}

func TestWorkload_RunReportsBenchmarkFigures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recv, err := topology.StartReceiver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	webhooks := map[string]string{"wh_1": "s1", "wh_2": "s2"}
	for id, secret := range webhooks {
		recv.Trust(id, secret, recv.URL)
	}
	srv := fakeService(t, recv.URL, webhooks)
	events := func(n int) []topology.Event {
		evs := make([]topology.Event, n)
		for i := range evs {
			evs[i] = topology.Event{AccountID: 1, JobID: 42, Webhooks: []string{"wh_1", "wh_2"}}
		}
		return evs
	}
	var cpu, switches atomic.Int64
	w := topology.Workload{
		API:      topology.API{BaseURL: srv.URL, InternalToken: "internal", HTTP: srv.Client()},
		Receiver: recv, Concurrency: 4,
		Traffic: topology.Traffic{Warm: events(5), Burst: events(30), Paced: events(200), PacedInterval: 5 * time.Millisecond, Rate: 400},
		CPU: func() map[string]time.Duration {
			return map[string]time.Duration{"api": time.Duration(cpu.Add(int64(time.Second)))}
		},
		Switches: func() map[string]int64 { return map[string]int64{"api": switches.Add(1000)} },
	}
	f, err := w.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f.Deliveries != 60 || f.Burst.Unique != 60 || f.Burst.BadSignatures != 0 || f.DeliveriesPerSec <= 0 {
		t.Fatalf("burst figures: %+v", f)
	}
	if f.CPUByProcess["api"] != time.Second || f.CPUMsPerDelivery != 1000.0/60 {
		t.Fatalf("CPU: %v, %v ms/delivery; want 1s over 60 deliveries", f.CPUByProcess, f.CPUMsPerDelivery)
	}
	if f.PacedDeliveries != 400 || f.Paced.Unique != 400 {
		t.Fatalf("paced deliveries = %d, %d arrived; want 2 for each of 200 events", f.PacedDeliveries, f.Paced.Unique)
	}
	// The fake CPU clock moves a second at each read: one before and one
	// after the paced phase.
	if f.PacedCPU["api"] != time.Second || f.PacedCPUMsPerDelivery() != 1000.0/400 {
		t.Fatalf("paced CPU: %v, %v ms/delivery; want 1s over 400 deliveries", f.PacedCPU, f.PacedCPUMsPerDelivery())
	}
	// The fake switch count moves 1,000 at each read, read only around the
	// paced phase.
	if f.PacedSwitches["api"] != 1000 || f.PacedSwitchesSplit() != "api 2.5" {
		t.Fatalf("paced switches: %v, %q; want 1000 over 400 deliveries, api 2.5", f.PacedSwitches, f.PacedSwitchesSplit())
	}
	line := topology.BenchmarkLine("BenchmarkWebhooks", f.Metrics())
	want := regexp.MustCompile(`^BenchmarkWebhooks\t\s+1\t\s*[0-9.e+]+ deliveries/s\t\s*[0-9.e+]+ cpu-ms/delivery\t\s*[0-9.e+]+ p50-ms@rate\t\s*[0-9.e+]+ p99-ms@rate\t\s*[0-9.e+]+ cpu-ms/delivery@rate$`)
	if !want.MatchString(line) {
		t.Fatalf("benchmark line %q is not in go test -bench form", line)
	}
}

// With Drain, a burst whose deliveries do not all arrive is reported, not
// failed: what is missing, what the receiver refused, and no later phase.
func TestWorkload_DrainReportsWhatIsMissingInsteadOfFailing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The first delivery is held past the drain; the others come while it
	// is, and the fake service never retries the ones refused. (It sends an
	// event's deliveries one after the other, so the held one's event sends
	// its second only after the drain: 7 requests, 6 refused.)
	shape, err := topology.ParseReceiverShape("429", topology.ReceiverOptions{Limit: 1, Delay: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	recv, err := topology.StartShapedReceiver(ctx, shape)
	if err != nil {
		t.Fatal(err)
	}
	webhooks := map[string]string{"wh_1": "s1", "wh_2": "s2"}
	for id, secret := range webhooks {
		recv.Trust(id, secret, recv.URL)
	}
	srv := fakeService(t, recv.URL, webhooks)
	events := func(n int) []topology.Event {
		evs := make([]topology.Event, n)
		for i := range evs {
			evs[i] = topology.Event{AccountID: 1, JobID: 42, Webhooks: []string{"wh_1", "wh_2"}}
		}
		return evs
	}
	w := topology.Workload{
		API:      topology.API{BaseURL: srv.URL, InternalToken: "internal", HTTP: srv.Client()},
		Receiver: recv, Concurrency: 4, Drain: 500 * time.Millisecond,
		Traffic: topology.Traffic{Burst: events(4), Paced: events(10), PacedInterval: time.Millisecond, Rate: 100},
		CPU:     func() map[string]time.Duration { return map[string]time.Duration{} },
	}
	f, err := w.Run(ctx)
	if err != nil {
		t.Fatalf("Run = %v, want the missing deliveries reported, not an error", err)
	}
	if f.Missing != 8 || f.Load.Requests != 7 || f.Load.Refused != 6 || f.Load.MaxInFlight != 1 || f.AllWithinMinute() {
		t.Fatalf("missing %d, load %+v, all within a minute %v; want 8 missing, 7 requests, 6 refused, 1 held",
			f.Missing, f.Load, f.AllWithinMinute())
	}
	if f.PacedDeliveries != 0 {
		t.Errorf("the paced phase ran after an unfinished burst")
	}
	if !strings.Contains(topology.BenchmarkLine("B", f.Metrics()), "6 429s") || !strings.Contains(f.LoadSummary(), "all within a minute: no") {
		t.Errorf("figures say nothing of the refusals: %s; %s", topology.BenchmarkLine("B", f.Metrics()), f.LoadSummary())
	}
}

// With Drain and every delivery arriving, the burst says so and the later
// phases run.
func TestWorkload_DrainedBurstThatArrivesRunsOn(t *testing.T) {
	ctx, recv, srv, _ := oneWebhook(t)
	events := func(n int) []topology.Event {
		evs := make([]topology.Event, n)
		for i := range evs {
			evs[i] = topology.Event{AccountID: 1, JobID: 42, Webhooks: []string{"wh_1"}}
		}
		return evs
	}
	w := topology.Workload{
		API:      topology.API{BaseURL: srv.URL, InternalToken: "internal", HTTP: srv.Client()},
		Receiver: recv, Concurrency: 4, Drain: time.Minute,
		Traffic: topology.Traffic{Burst: events(20), Paced: events(10), PacedInterval: time.Millisecond, Rate: 1000},
		CPU:     func() map[string]time.Duration { return map[string]time.Duration{} },
	}
	f, err := w.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f.Missing != 0 || !f.AllWithinMinute() || f.Load.Requests < 20 || f.Load.Refused != 0 || f.PacedDeliveries != 10 {
		t.Fatalf("missing %d, within %v, load %+v, paced %d; want all 20 arrived and the paced phase run", f.Missing, f.AllWithinMinute(), f.Load, f.PacedDeliveries)
	}
	if line := topology.BenchmarkLine("B", f.Metrics()); !strings.Contains(line, "1 all-within-1m") {
		t.Errorf("benchmark line %q lacks all-within-1m", line)
	}
}

// With AtRest, the burst's CPU is read beside what each process spends at
// rest: a process using half a core whatever it does is at rest for half
// the burst's elapsed time.
func TestWorkload_CPUAtRest(t *testing.T) {
	ctx, recv, srv, _ := oneWebhook(t)
	start := time.Now()
	w := topology.Workload{
		API:      topology.API{BaseURL: srv.URL, InternalToken: "internal", HTTP: srv.Client()},
		Receiver: recv, Concurrency: 2, AtRest: 200 * time.Millisecond,
		Traffic: topology.Traffic{Burst: []topology.Event{{AccountID: 1, JobID: 42, Webhooks: []string{"wh_1"}}}},
		CPU: func() map[string]time.Duration {
			return map[string]time.Duration{"temporal": time.Since(start) / 2}
		},
	}
	f, err := w.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rest, ok := f.CPUAtRest["temporal"]
	if !ok || f.Elapsed <= 0 {
		t.Fatalf("no CPU at rest: %+v", f.CPUAtRest)
	}
	if want := f.Elapsed / 2; rest < want*8/10 || rest > want*12/10 {
		t.Errorf("at rest %v over a burst of %v, want about %v", rest, f.Elapsed, want)
	}
	if !strings.Contains(f.CPUSplit(), "(at rest ") {
		t.Errorf("CPUSplit %q does not say what is at rest", f.CPUSplit())
	}
}
