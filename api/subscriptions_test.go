package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	subIDPattern  = regexp.MustCompile(`^wsu_[a-z2-7]{26}$`)
	micros16      = regexp.MustCompile(`^[0-9]{16}$`)
	secretPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{43,}$`)
)

// requireGoldenJSON compares got with the golden JSON text after filling in
// the per-run values, as parsed JSON: key sets, value types and values must
// all match exactly.
func requireGoldenJSON(t *testing.T, got []byte, golden string, vars map[string]string) {
	t.Helper()
	var pairs []string
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v)
	}
	want := strings.NewReplacer(pairs...).Replace(golden)
	var g, w any
	dec := json.NewDecoder(bytes.NewReader(got))
	dec.UseNumber()
	if err := dec.Decode(&g); err != nil {
		t.Fatalf("response is not JSON: %v; body: %s", err, got)
	}
	dec = json.NewDecoder(strings.NewReader(want))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("golden is not JSON: %v; golden: %s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("response JSON differs from golden\n got: %s\nwant: %s", got, want)
	}
}

func TestCreateSubscription_Golden(t *testing.T) {
	s := newSubsAPI(t, nil)
	resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID), s.Writer, validBody())
	requireStatus(t, resp, http.StatusCreated)
	var got subItem
	resp.decodeData(t, &got)
	if !subIDPattern.MatchString(got.ID) || !micros16.MatchString(got.CreatedAt) || got.HMACSecret == nil || !secretPattern.MatchString(*got.HMACSecret) {
		t.Fatalf("id %q, created_at %q or hmac_secret malformed; body: %s", got.ID, got.CreatedAt, resp.Body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store (the response carries a secret)", cc)
	}
	requireGoldenJSON(t, resp.Body, `{
		"data": {
			"hmac_secret": "{{secret}}",
			"id": "{{id}}",
			"account_identifier": "{{act}}",
			"name": "Run alerts",
			"description": "Tells the on-call channel",
			"job_ids": ["42", "7"],
			"event_types": ["job.run.completed", "job.run.errored"],
			"client_url": "https://hooks.example.com/webhooks",
			"active": true,
			"created_at": "{{created}}",
			"updated_at": "{{created}}",
			"account_id": "{{account_id}}",
			"http_status_code": "0"
		},
		"status": {"code": 201, "is_success": true}
	}`, map[string]string{
		"secret": *got.HMACSecret, "id": got.ID, "act": s.Account.Identifier,
		"created": got.CreatedAt, "account_id": strconv.FormatInt(s.Account.ID, 10),
	})
}

func TestCreateSubscription_Defaults(t *testing.T) {
	s := newSubsAPI(t, nil)
	resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID)+"/", s.Writer, map[string]any{
		"name": "Minimal", "client_url": "https://" + publicHost + "/", "event_types": []string{"job.run.started"},
		"id": "wsu_chosenbytheclient", "unknown_field": map[string]any{"x": 1},
	})
	requireStatus(t, resp, http.StatusCreated)
	var got subItem
	resp.decodeData(t, &got)
	if got.ID == "wsu_chosenbytheclient" || !subIDPattern.MatchString(got.ID) {
		t.Errorf("id = %q: a client-sent id must be ignored", got.ID)
	}
	if got.Description != "" || len(got.JobIDs) != 0 || got.JobIDs == nil || !got.Active {
		t.Errorf("defaults: description %q, job_ids %v (nil %v), active %v; want \"\", [], true", got.Description, got.JobIDs, got.JobIDs == nil, got.Active)
	}
	if !bytes.Contains(resp.Body, []byte(`"job_ids":[]`)) {
		t.Errorf("job_ids must be an empty array, body: %s", resp.Body)
	}
}

func TestCreateSubscription_JobIDsAsDigitStrings(t *testing.T) {
	s := newSubsAPI(t, nil)
	body := validBody()
	body["job_ids"] = []any{"12", 9007199254740993, "3"}
	got := s.mustCreateSub(t, body)
	if want := []string{"12", "9007199254740993", "3"}; !reflect.DeepEqual(got.JobIDs, want) {
		t.Errorf("job_ids = %v, want %v (order kept, exact)", got.JobIDs, want)
	}
}

func TestGetSubscription_Golden(t *testing.T) {
	s := newSubsAPI(t, nil)
	created := s.mustCreateSub(t, nil)
	for _, suffix := range []string{"", "/"} {
		resp := doJSON(t, http.MethodGet, s.subURL(s.Account.ID, created.ID)+suffix, s.Writer, nil)
		requireStatus(t, resp, http.StatusOK)
		requireGoldenJSON(t, resp.Body, `{
			"data": {
				"id": "{{id}}",
				"account_identifier": "{{act}}",
				"name": "Run alerts",
				"description": "Tells the on-call channel",
				"job_ids": ["42", "7"],
				"event_types": ["job.run.completed", "job.run.errored"],
				"client_url": "https://hooks.example.com/webhooks",
				"active": true,
				"created_at": "{{created}}",
				"updated_at": "{{updated}}",
				"account_id": "{{account_id}}",
				"http_status_code": "0"
			},
			"status": {"code": 200, "is_success": true}
		}`, map[string]string{
			"id": created.ID, "act": s.Account.Identifier, "created": created.CreatedAt,
			"updated": created.UpdatedAt, "account_id": strconv.FormatInt(s.Account.ID, 10),
		})
	}
}

func TestGetSubscription_DispatchedAtOnceDispatched(t *testing.T) {
	s := newSubsAPI(t, nil)
	created := s.mustCreateSub(t, nil)
	dispatched := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	if _, err := s.DB.Pool.Exec(context.Background(),
		"UPDATE webhook_subscriptions SET http_status_code = 502, dispatched_at = $1 WHERE id = $2", dispatched, created.ID); err != nil {
		t.Fatal(err)
	}
	got := s.mustGetSub(t, created.ID)
	if got.DispatchedAt == nil || *got.DispatchedAt != strconv.FormatInt(dispatched.UnixMicro(), 10) || got.HTTPStatusCode != "502" {
		t.Fatalf("dispatched_at %v, http_status_code %q; want %d and \"502\"", got.DispatchedAt, got.HTTPStatusCode, dispatched.UnixMicro())
	}
	// The list shows it too; the update response does not (spec 4.4).
	resp := doJSON(t, http.MethodGet, s.subsURL(s.Account.ID), s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	var list []subItem
	resp.decodeData(t, &list)
	if len(list) != 1 || list[0].DispatchedAt == nil {
		t.Errorf("list item lacks dispatched_at: %s", resp.Body)
	}
	resp = doJSON(t, http.MethodPut, s.subURL(s.Account.ID, created.ID), s.Writer, map[string]any{"name": "Renamed"})
	requireStatus(t, resp, http.StatusOK)
	if bytes.Contains(resp.Body, []byte("dispatched_at")) || bytes.Contains(resp.Body, []byte("hmac_secret")) {
		t.Errorf("update response must carry neither dispatched_at nor hmac_secret: %s", resp.Body)
	}
}

func TestListSubscriptions_Golden(t *testing.T) {
	s := newSubsAPI(t, nil)
	first := s.mustCreateSub(t, nil)
	resp := doJSON(t, http.MethodGet, s.subsURL(s.Account.ID), s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	requireGoldenJSON(t, resp.Body, `{
		"data": [{
			"id": "{{id}}",
			"account_identifier": "{{act}}",
			"name": "Run alerts",
			"description": "Tells the on-call channel",
			"job_ids": ["42", "7"],
			"event_types": ["job.run.completed", "job.run.errored"],
			"client_url": "https://hooks.example.com/webhooks",
			"active": true,
			"created_at": "{{created}}",
			"updated_at": "{{created}}",
			"account_id": "{{account_id}}",
			"http_status_code": "0"
		}],
		"status": {"code": 200, "is_success": true},
		"extra": {
			"pagination": {"total_count": 1, "count": 1},
			"filters": {"offset": 0, "limit": 10}
		}
	}`, map[string]string{
		"id": first.ID, "act": s.Account.Identifier, "created": first.CreatedAt,
		"account_id": strconv.FormatInt(s.Account.ID, 10),
	})
}

func TestListSubscriptions_Empty(t *testing.T) {
	s := newSubsAPI(t, nil)
	resp := doJSON(t, http.MethodGet, s.subsURL(s.Account.ID)+"/", s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	requireGoldenJSON(t, resp.Body, `{"data": [], "status": {"code": 200, "is_success": true},
		"extra": {"pagination": {"total_count": 0, "count": 0}, "filters": {"offset": 0, "limit": 10}}}`, nil)
}

func TestUpdateSubscription_Golden(t *testing.T) {
	s := newSubsAPI(t, nil)
	created := s.mustCreateSub(t, nil)
	resp := doJSON(t, http.MethodPut, s.subURL(s.Account.ID, created.ID)+"/", s.Writer, map[string]any{
		"name": "Renamed", "job_ids": []any{}, "event_types": []string{"job.run.started"},
	})
	requireStatus(t, resp, http.StatusOK)
	var got subItem
	resp.decodeData(t, &got)
	if got.UpdatedAt <= created.UpdatedAt || !micros16.MatchString(got.UpdatedAt) {
		t.Errorf("updated_at %s must advance past %s", got.UpdatedAt, created.UpdatedAt)
	}
	requireGoldenJSON(t, resp.Body, `{
		"data": {
			"id": "{{id}}",
			"account_identifier": "{{act}}",
			"name": "Renamed",
			"description": "Tells the on-call channel",
			"job_ids": [],
			"event_types": ["job.run.started"],
			"client_url": "https://hooks.example.com/webhooks",
			"active": true,
			"created_at": "{{created}}",
			"updated_at": "{{updated}}",
			"account_id": "{{account_id}}",
			"http_status_code": "0"
		},
		"status": {"code": 200, "is_success": true}
	}`, map[string]string{
		"id": created.ID, "act": s.Account.Identifier, "created": created.CreatedAt,
		"updated": got.UpdatedAt, "account_id": strconv.FormatInt(s.Account.ID, 10),
	})
	// What the update returned is what is stored.
	if stored := s.mustGetSub(t, created.ID); !reflect.DeepEqual(stored, got) {
		t.Errorf("stored %+v differs from update response %+v", stored, got)
	}
}

func TestUpdateSubscription_AbsentFieldsKeepValues(t *testing.T) {
	s := newSubsAPI(t, nil)
	created := s.mustCreateSub(t, nil)
	tests := []struct {
		name  string
		body  map[string]any
		check func(got subItem) bool
	}{
		{"EmptyBody", map[string]any{}, func(g subItem) bool { return g.Name == created.Name && g.Active }},
		{"NullsAreAbsent", map[string]any{"name": nil, "job_ids": nil}, func(g subItem) bool {
			return g.Name == created.Name && reflect.DeepEqual(g.JobIDs, created.JobIDs)
		}},
		{"DescriptionOnly", map[string]any{"description": ""}, func(g subItem) bool {
			return g.Description == "" && g.Name == created.Name && reflect.DeepEqual(g.EventTypes, created.EventTypes)
		}},
		{"Deactivate", map[string]any{"active": false}, func(g subItem) bool { return !g.Active && g.ClientURL == created.ClientURL }},
		{"JobIDsReplaced", map[string]any{"job_ids": []any{"5", 6}}, func(g subItem) bool { return reflect.DeepEqual(g.JobIDs, []string{"5", "6"}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, http.MethodPut, s.subURL(s.Account.ID, created.ID), s.Writer, tt.body)
			requireStatus(t, resp, http.StatusOK)
			if got := s.mustGetSub(t, created.ID); !tt.check(got) {
				t.Errorf("after %v: %+v", tt.body, got)
			}
		})
	}
}

func TestUpdateSubscription_ClientURLChangeReactivates(t *testing.T) {
	s := newSubsAPI(t, nil)
	body := validBody()
	body["active"] = false
	created := s.mustCreateSub(t, body)
	if created.Active {
		t.Fatal("created inactive subscription is active")
	}
	tests := []struct {
		name       string
		body       map[string]any
		wantActive bool
	}{
		{"SameURLKeepsInactive", map[string]any{"client_url": created.ClientURL}, false},
		{"OtherFieldKeepsInactive", map[string]any{"name": "x"}, false},
		{"NewURLReactivates", map[string]any{"client_url": "https://" + publicHost + "/v2"}, true},
		{"DeactivateAgain", map[string]any{"active": false}, false},
		{"NewURLWithExplicitActiveFalse", map[string]any{"client_url": "https://" + publicHost + "/v3", "active": false}, false},
		{"NewURLAgainReactivates", map[string]any{"client_url": "https://" + publicHost + "/v4"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, http.MethodPut, s.subURL(s.Account.ID, created.ID), s.Writer, tt.body)
			requireStatus(t, resp, http.StatusOK)
			var got subItem
			resp.decodeData(t, &got)
			if got.Active != tt.wantActive || s.mustGetSub(t, created.ID).Active != tt.wantActive {
				t.Errorf("active = %v, want %v", got.Active, tt.wantActive)
			}
		})
	}
}

func TestDeleteSubscription(t *testing.T) {
	s := newSubsAPI(t, nil)
	created := s.mustCreateSub(t, nil)
	other := s.mustCreateSub(t, nil)
	resp := doJSON(t, http.MethodDelete, s.subURL(s.Account.ID, created.ID)+"/", s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	requireGoldenJSON(t, resp.Body, `{"data": {"id": "{{id}}"}, "status": {"code": 200, "is_success": true}}`,
		map[string]string{"id": created.ID})

	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		resp := doJSON(t, method, s.subURL(s.Account.ID, created.ID), s.Writer, map[string]any{"name": "x"})
		requireNotFoundWithoutPermission(t, resp)
	}
	resp = doJSON(t, http.MethodGet, s.subsURL(s.Account.ID), s.Writer, nil)
	var list []subItem
	resp.decodeData(t, &list)
	if len(list) != 1 || list[0].ID != other.ID {
		t.Errorf("list after delete = %+v, want only %s", list, other.ID)
	}
	// Soft delete: the row stays for delivery history, marked deleted and inactive.
	var deleted, active bool
	if err := s.DB.Pool.QueryRow(context.Background(),
		"SELECT deleted_at IS NOT NULL, active FROM webhook_subscriptions WHERE id = $1", created.ID).Scan(&deleted, &active); err != nil {
		t.Fatal(err)
	}
	if !deleted || active {
		t.Errorf("deleted row: deleted %v active %v, want true false", deleted, active)
	}
}
