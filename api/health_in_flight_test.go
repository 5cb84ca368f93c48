package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// TestHealth_InFlightLimit: a webhook's health carries its in-flight limit:
// the initial one with observed_at null until a worker reports one that
// moved, then that limit, its attempts in flight and unloaded latency.
func TestHealth_InFlightLimit(t *testing.T) {
	s := newIncidentsAPI(t)
	sub := s.mustCreateSub(t, nil)
	type inFlight struct {
		Limit             int     `json:"limit"`
		InFlight          int     `json:"in_flight"`
		UnloadedLatencyMs int64   `json:"unloaded_latency_ms"`
		ObservedAt        *string `json:"observed_at"`
	}
	health := func() inFlight {
		t.Helper()
		resp := doJSON(t, http.MethodGet, s.subURL(s.Account.ID, sub.ID)+"/health", s.Writer, nil)
		requireStatus(t, resp, http.StatusOK)
		var h struct {
			InFlight inFlight `json:"in_flight"`
		}
		resp.decodeData(t, &h)
		return h.InFlight
	}
	if got := health(); got.Limit != 16 || got.ObservedAt != nil || got.InFlight != 0 {
		t.Errorf("new webhook's in_flight = %+v, want the initial limit 16 and observed_at null", got)
	}
	before := time.Now()
	if err := s.Store.SaveInFlightLimits(context.Background(), []deliveries.InFlightLimit{
		{WebhookID: sub.ID, Limit: 212, InFlight: 180, UnloadedLatency: 203 * time.Millisecond},
		{WebhookID: "wsu_deleted_meanwhile", Limit: 3},
	}); err != nil {
		t.Fatal(err)
	}
	got := health()
	if got.Limit != 212 || got.InFlight != 180 || got.UnloadedLatencyMs != 203 || got.ObservedAt == nil {
		t.Fatalf("in_flight after a report = %+v", got)
	}
	if at := microsTime(t, got.ObservedAt); at.Before(before.Add(-time.Minute)) || at.After(time.Now().Add(time.Minute)) {
		t.Errorf("observed_at = %v, want about now", at)
	}
}
