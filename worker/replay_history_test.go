package worker_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestWriteReplayHistories records real histories for the replay test in
// workflows/. It only runs with WEBHOOKS_WRITE_REPLAY_HISTORY=1, after a
// deliberate change of workflow code:
//
//	WEBHOOKS_WRITE_REPLAY_HISTORY=1 go test ./worker -run TestWriteReplayHistories
func TestWriteReplayHistories(t *testing.T) {
	if os.Getenv("WEBHOOKS_WRITE_REPLAY_HISTORY") != "1" {
		t.Log("set WEBHOOKS_WRITE_REPLAY_HISTORY=1 to rewrite workflows/testdata")
		return
	}
	// An 11 s backoff is above the workflow task timeout, so the retry is a
	// durable timer in the history (the path long real backoffs take). The
	// first attempt fails in the event workflow, which hands the delivery to
	// its delivery workflow; the second attempt succeeds there.
	e := newEnv(t, true, map[string]string{"DELIVERY_RETRY_INITIAL_INTERVAL": "11s", "DELIVERY_RETRY_MAX_INTERVAL": "11s"})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(200)
	})
	sub, _ := e.subscribe(rc.URL, allTypes, []int64{1}, true)
	ok := newReceiver(t, status(http.StatusOK))
	e.subscribe(ok.URL, allTypes, []int64{1}, true)
	ev := e.ingest(webhooks.EventRunCompleted, 1, "")
	if res := e.waitDelivery(ev, sub.ID); res.Status != deliveries.StatusSucceeded || res.Attempts != 2 {
		t.Fatalf("delivery %+v, want succeeded at the second attempt", res)
	}
	e.writeHistory(t, deliveries.EventWorkflowID(ev), "event_handoff.json")
	e.writeHistory(t, deliveries.DeliveryWorkflowID(ev, sub.ID), "deliver_handoff.json")
}

func (e *env) writeHistory(t *testing.T, workflowID, name string) {
	t.Helper()
	iter := e.temporal.GetWorkflowHistory(context.Background(), workflowID, "", false, 0)
	h := &history.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "workflows", "testdata", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
