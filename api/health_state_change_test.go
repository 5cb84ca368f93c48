package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestHealth_StateChange: the health of a webhook that is sent state
// changes only lists its failing jobs, since their first failure; a
// webhook sent every event follows no state.
func TestHealth_StateChange(t *testing.T) {
	s := newIncidentsAPI(t)
	following := s.mustCreateSub(t, nil)
	every := s.mustCreateSub(t, nil)
	if _, err := s.DB.Pool.Exec(t.Context(), `
		INSERT INTO webhook_delivery_settings (subscription_id, account_id, notify_on, created_at, updated_at)
		VALUES ($1, $2, 'state_change', now(), now())`, following.ID, s.Account.ID); err != nil {
		t.Fatal(err)
	}
	// Ingested as the API's committer does: judged with the account's
	// routing as it is now.
	routing, err := s.Store.WebhookRouting(t.Context(), []int64{s.Account.ID})
	if err != nil || len(routing) != 1 || !routing[0].Routed() {
		t.Fatalf("routing %+v (%v), want the account's, with a webhook following states", routing, err)
	}
	first := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	for i, ev := range []struct {
		job, run, typ string
		at            time.Time
	}{
		{"42", "1", webhooks.EventRunErrored, first},
		{"42", "2", webhooks.EventRunErrored, first.Add(time.Hour)},
		{"43", "1", webhooks.EventRunErrored, first},
		{"43", "2", webhooks.EventRunCompleted, first.Add(time.Hour)},
	} {
		if _, _, err := s.Store.IngestEvents(t.Context(), []deliveries.NewEvent{{
			ID: webhooks.NewID(webhooks.EventIDPrefix), AccountID: s.Account.ID, Type: ev.typ, JobID: ev.job, RunID: ev.run,
			ToolName: "dbt", OutcomeAt: ev.at,
			RoutingVersion: routing[0].Version, Routed: true}}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	type failingJob struct {
		JobID         string `json:"job_id"`
		FailingSince  string `json:"failing_since"`
		LastRunID     string `json:"last_run_id"`
		LastOutcomeAt string `json:"last_outcome_at"`
	}
	type stateChange struct {
		Enabled          bool         `json:"enabled"`
		FailingJobs      []failingJob `json:"failing_jobs"`
		FailingJobsTotal int          `json:"failing_jobs_total"`
	}
	health := func(id string) stateChange {
		t.Helper()
		resp := doJSON(t, http.MethodGet, s.subURL(s.Account.ID, id)+"/health", s.Writer, nil)
		requireStatus(t, resp, http.StatusOK)
		var h struct {
			StateChange *stateChange `json:"state_change"`
		}
		resp.decodeData(t, &h)
		if h.StateChange == nil || h.StateChange.FailingJobs == nil {
			t.Fatalf("health of %s has no state_change with a failing_jobs array: %+v", id, h.StateChange)
		}
		return *h.StateChange
	}
	got := health(following.ID)
	if !got.Enabled || got.FailingJobsTotal != 1 || len(got.FailingJobs) != 1 {
		t.Fatalf("state_change = %+v, want job 42 failing alone", got)
	}
	j := got.FailingJobs[0]
	since, last := j.FailingSince, j.LastOutcomeAt
	if j.JobID != "42" || j.LastRunID != "2" || !microsTime(t, &since).Equal(first) ||
		!microsTime(t, &last).Equal(first.Add(time.Hour)) {
		t.Errorf("failing job = %+v, want job 42 failing since run 1, last seen run 2", j)
	}
	if got := health(every.ID); got.Enabled || len(got.FailingJobs) != 0 || got.FailingJobsTotal != 0 {
		t.Errorf("webhook of every event: state_change = %+v, want disabled and empty", got)
	}
}
