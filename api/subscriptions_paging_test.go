package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
)

type listExtra struct {
	Pagination struct {
		TotalCount int64 `json:"total_count"`
		Count      int   `json:"count"`
	} `json:"pagination"`
	Filters struct {
		Offset int64 `json:"offset"`
		Limit  int   `json:"limit"`
	} `json:"filters"`
}

// TestListSubscriptions_Paging walks 25 subscriptions with every window
// shape: default, exact pages, a partial last page, past the end, limit 100.
func TestListSubscriptions_Paging(t *testing.T) {
	s := newSubsAPI(t, nil)
	var ids []string
	for i := range 25 {
		body := validBody()
		body["name"] = "sub-" + strconv.Itoa(i)
		ids = append(ids, s.mustCreateSub(t, body).ID)
	}
	// Deleted subscriptions and other accounts' never appear or count.
	resp := doJSON(t, http.MethodDelete, s.subURL(s.Account.ID, ids[3]), s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	ids = append(ids[:3], ids[4:]...)
	other := s.mustCreateAccount(t, webhooks.PlanTeam)
	otherToken := s.mustCreateServiceToken(t, other.ID, "member").Token
	requireStatus(t, doJSON(t, http.MethodPost, s.subsURL(other.ID), otherToken, validBody()), http.StatusCreated)

	tests := []struct {
		query               string
		wantFrom, wantCount int
		wantOffset          int64
		wantLimit           int
	}{
		{"", 0, 10, 0, 10},
		{"?limit=10&offset=10", 10, 10, 10, 10},
		{"?offset=20", 20, 4, 20, 10},
		{"?offset=24", 24, 0, 24, 10},
		{"?offset=1000", 0, 0, 1000, 10},
		{"?limit=100", 0, 24, 0, 100},
		{"?limit=1", 0, 1, 0, 1},
		{"?limit=7&offset=5", 5, 7, 5, 7},
		{"?limit=5&offset=0&unknown=1", 0, 5, 0, 5},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp := doJSON(t, http.MethodGet, s.subsURL(s.Account.ID)+tt.query, s.Writer, nil)
			requireStatus(t, resp, http.StatusOK)
			var items []subItem
			resp.decodeData(t, &items)
			var extra listExtra
			if err := json.Unmarshal(resp.Env.Extra, &extra); err != nil {
				t.Fatalf("extra: %v; body %s", err, resp.Body)
			}
			if extra.Pagination.TotalCount != 24 || extra.Pagination.Count != tt.wantCount || len(items) != tt.wantCount {
				t.Errorf("total_count %d, count %d, items %d; want 24, %d", extra.Pagination.TotalCount, extra.Pagination.Count, len(items), tt.wantCount)
			}
			if extra.Filters.Offset != tt.wantOffset || extra.Filters.Limit != tt.wantLimit {
				t.Errorf("filters = %+v, want offset %d limit %d", extra.Filters, tt.wantOffset, tt.wantLimit)
			}
			for i, it := range items {
				if it.ID != ids[tt.wantFrom+i] {
					t.Fatalf("item %d is %s, want %s (creation order)", i, it.ID, ids[tt.wantFrom+i])
				}
			}
		})
	}
}

// TestListSubscriptions_OrderTiesBrokenByID: subscriptions created in the
// same microsecond list in id order, so pages never overlap or skip.
func TestListSubscriptions_OrderTiesBrokenByID(t *testing.T) {
	s := newSubsAPI(t, nil)
	var ids []string
	for range 6 {
		ids = append(ids, s.mustCreateSub(t, nil).ID)
	}
	same := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.DB.Pool.Exec(context.Background(), "UPDATE webhook_subscriptions SET created_at = $1", same); err != nil {
		t.Fatal(err)
	}
	sort.Strings(ids)
	var got []string
	for offset := 0; offset < 6; offset += 4 {
		resp := doJSON(t, http.MethodGet, s.subsURL(s.Account.ID)+"?limit=4&offset="+strconv.Itoa(offset), s.Writer, nil)
		requireStatus(t, resp, http.StatusOK)
		var items []subItem
		resp.decodeData(t, &items)
		for _, it := range items {
			got = append(got, it.ID)
		}
	}
	if len(got) != len(ids) {
		t.Fatalf("pages returned %d ids, want %d", len(got), len(ids))
	}
	for i := range ids {
		if got[i] != ids[i] {
			t.Fatalf("order = %v, want %v", got, ids)
		}
	}
}
