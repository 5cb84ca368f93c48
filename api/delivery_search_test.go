package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// searchFixture is an account with two live webhooks and a deleted one,
// three events (each delivered to all three) and another account whose
// event has the same job and run ids.
type searchFixture struct {
	*subsAPI
	store          *deliveries.Store
	hooks          []subItem  // live: 0 and 1; 2 is deleted
	events         []string   // e0 (job 42, run r1, completed), e1 (job 42, run r2, errored), e2 (job 7, run r3, started)
	deliveryIDs    [][]string // by event and hook: read once ingested (an id carries the second it was made)
	between        time.Time  // after e0's deliveries were created, before e1's
	other          webhooks.Account
	otherReader    string
	otherHook      subItem
	otherEventID   string
	failedDelivery string // e1's delivery to hooks[0]
}

func newSearchFixture(t *testing.T) *searchFixture {
	t.Helper()
	f := &searchFixture{subsAPI: &subsAPI{}}
	f.testAPI = newTestAPI(t, withSubscriptions(t, &f.Box, nil), withDeliveryStore(t))
	f.Account = f.mustCreateAccount(t, webhooks.PlanTeam)
	f.Writer = f.mustCreateUser(t, f.Account.ID, "developer", "member").Token
	f.store = deliveries.NewStore(f.DB.Pool)
	body := validBody()
	body["job_ids"] = []int64{}
	body["event_types"] = webhooks.EventTypes
	for range 3 {
		f.hooks = append(f.hooks, f.mustCreateSub(t, body))
	}
	for i, e := range []struct{ typ, job, run string }{
		{webhooks.EventRunCompleted, "42", "r1"}, {webhooks.EventRunErrored, "42", "r2"}, {webhooks.EventRunStarted, "7", "r3"},
	} {
		id := webhooks.NewID(webhooks.EventIDPrefix)
		f.events = append(f.events, id)
		f.ingest(t, f.Account.ID, id, e.typ, e.job, e.run)
		time.Sleep(20 * time.Millisecond)
		if i == 0 {
			f.between = time.Now()
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, ev := range f.events {
		ids := make([]string, len(f.hooks))
		for h, hook := range f.hooks {
			ids[h] = testenv.DeliveryID(t, f.DB.Pool, ev, hook.ID)
		}
		f.deliveryIDs = append(f.deliveryIDs, ids)
	}
	f.failedDelivery = f.delivery(1, 0)
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{
		SubscriptionID: f.hooks[0].ID, DeliveryID: f.failedDelivery, AttemptNumber: 1, StartedAt: time.Now(), Duration: time.Millisecond,
		StatusCode: 500, ErrorKind: "http_status", Status: deliveries.StatusFailed, Body: deliveries.FixedBody{Payload: []byte(`{}`)},
	}}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	requireStatus(t, doJSON(t, http.MethodDelete, f.subURL(f.Account.ID, f.hooks[2].ID), f.Writer, nil), http.StatusOK)

	f.other = f.mustCreateAccount(t, webhooks.PlanTeam)
	otherWriter := f.mustCreateUser(t, f.other.ID, "developer", "member").Token
	f.otherReader = otherWriter
	resp := doJSON(t, http.MethodPost, f.subsURL(f.other.ID), otherWriter, body)
	requireStatus(t, resp, http.StatusCreated)
	resp.decodeData(t, &f.otherHook)
	f.otherEventID = webhooks.NewID(webhooks.EventIDPrefix)
	f.ingest(t, f.other.ID, f.otherEventID, webhooks.EventRunCompleted, "42", "r1")
	return f
}

func (f *searchFixture) ingest(t *testing.T, accountID int64, id, typ, job, run string) {
	t.Helper()
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{
		ID: id, AccountID: accountID, Type: typ, JobID: job, RunID: run, Data: webhooks.RunData{JobID: job}, ToolName: "dbt",
	}}); err != nil {
		t.Fatal(err)
	}
}

func (f *searchFixture) searchURL(accountID int64, query string) string {
	return f.URL + "/api/v3/accounts/" + strconv.FormatInt(accountID, 10) + "/webhooks/deliveries?" + query
}

// delivery is the id of event i's delivery to hook h.
func (f *searchFixture) delivery(i, h int) string {
	return f.deliveryIDs[i][h]
}

type searchPage struct {
	IDs        []string
	Items      []map[string]any
	TotalCount int64
	Count      int
	Filters    map[string]any
}

func search(t *testing.T, u, token string) searchPage {
	t.Helper()
	resp := doJSON(t, http.MethodGet, u, token, nil)
	requireStatus(t, resp, http.StatusOK)
	var p searchPage
	resp.decodeData(t, &p.Items)
	for _, it := range p.Items {
		p.IDs = append(p.IDs, it["id"].(string))
	}
	var extra struct {
		Pagination struct {
			TotalCount int64 `json:"total_count"`
			Count      int   `json:"count"`
		} `json:"pagination"`
		Filters map[string]any `json:"filters"`
	}
	if err := json.Unmarshal(resp.Env.Extra, &extra); err != nil {
		t.Fatalf("extra %s: %v", resp.Env.Extra, err)
	}
	p.TotalCount, p.Count, p.Filters = extra.Pagination.TotalCount, extra.Pagination.Count, extra.Filters
	return p
}

func TestSearchDeliveries_Filters(t *testing.T) {
	f := newSearchFixture(t)
	between := url.QueryEscape(f.between.Format(time.RFC3339Nano))
	cases := []struct {
		name  string
		query string
		want  []string // newest first
	}{
		{"All", "", []string{f.delivery(2, 0), f.delivery(2, 1), f.delivery(1, 0), f.delivery(1, 1), f.delivery(0, 0), f.delivery(0, 1)}},
		{"EventID", "event_id=" + f.events[0], []string{f.delivery(0, 0), f.delivery(0, 1)}},
		{"JobID", "job_id=42", []string{f.delivery(1, 0), f.delivery(1, 1), f.delivery(0, 0), f.delivery(0, 1)}},
		{"RunID", "run_id=r2", []string{f.delivery(1, 0), f.delivery(1, 1)}},
		{"RunAndJob", "run_id=r1&job_id=42", []string{f.delivery(0, 0), f.delivery(0, 1)}},
		{"RunOfAnotherJob", "run_id=r1&job_id=7", nil},
		{"EventAndRun", "event_id=" + f.events[2] + "&run_id=r3", []string{f.delivery(2, 0), f.delivery(2, 1)}},
		{"Status", "status=failed", []string{f.failedDelivery}},
		{"JobAndStatus", "job_id=42&status=failed", []string{f.failedDelivery}},
		{"EventType", "event_type=job.run.started", []string{f.delivery(2, 0), f.delivery(2, 1)}},
		{"Since", "since=" + between, []string{f.delivery(2, 0), f.delivery(2, 1), f.delivery(1, 0), f.delivery(1, 1)}},
		{"Until", "until=" + between, []string{f.delivery(0, 0), f.delivery(0, 1)}},
		{"JobSinceUntil", "job_id=42&since=" + between + "&until=" + url.QueryEscape(time.Now().Add(time.Minute).Format(time.RFC3339)), []string{f.delivery(1, 0), f.delivery(1, 1)}},
		{"UnknownEvent", "event_id=wev_unknown", nil},
		{"DeletedWebhookOnly", "event_id=" + f.events[0] + "&status=pending", []string{f.delivery(0, 0), f.delivery(0, 1)}},
		{"AnotherAccountsEvent", "event_id=" + f.otherEventID, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := search(t, f.searchURL(f.Account.ID, tc.query), f.Writer)
			// Deliveries of one event are created in one statement: the
			// same created_at, ordered by id descending.
			want := sortTies(f, tc.want)
			if !slices.Equal(p.IDs, want) {
				t.Errorf("ids %v, want %v", p.IDs, want)
			}
			if p.TotalCount != int64(len(want)) || p.Count != len(want) {
				t.Errorf("pagination %d/%d, want %d", p.Count, p.TotalCount, len(want))
			}
			for _, it := range p.Items {
				if it["webhook_id"] == f.hooks[2].ID {
					t.Errorf("a deleted webhook's delivery is listed: %v", it)
				}
			}
		})
	}
}

// sortTies orders deliveries of the same event (created together) by id
// descending, as the API does.
func sortTies(f *searchFixture, ids []string) []string {
	eventOf := map[string]int{}
	for i := range f.events {
		for h := range f.hooks {
			eventOf[f.delivery(i, h)] = i
		}
	}
	out := slices.Clone(ids)
	slices.SortStableFunc(out, func(a, b string) int {
		if eventOf[a] != eventOf[b] {
			return eventOf[b] - eventOf[a]
		}
		return strings.Compare(b, a)
	})
	return out
}

func TestSearchDeliveries_PagesAndEchoesFilters(t *testing.T) {
	f := newSearchFixture(t)
	all := search(t, f.searchURL(f.Account.ID, ""), f.Writer)
	if len(all.IDs) != 6 {
		t.Fatalf("%d deliveries, want 6", len(all.IDs))
	}
	page := search(t, f.searchURL(f.Account.ID, "limit=2&offset=2"), f.Writer)
	if !slices.Equal(page.IDs, all.IDs[2:4]) || page.TotalCount != 6 || page.Count != 2 {
		t.Errorf("page %v (%d of %d), want %v of 6", page.IDs, page.Count, page.TotalCount, all.IDs[2:4])
	}
	past := search(t, f.searchURL(f.Account.ID, "offset=100"), f.Writer)
	if len(past.IDs) != 0 || past.TotalCount != 6 {
		t.Errorf("past the end: %v, total %d", past.IDs, past.TotalCount)
	}
	want := map[string]any{"offset": float64(0), "limit": float64(10), "status": nil, "event_id": nil, "job_id": nil,
		"run_id": nil, "event_type": nil, "since": nil, "until": nil}
	if !mapsEqual(all.Filters, want) {
		t.Errorf("filters %v, want %v", all.Filters, want)
	}
	q := "limit=5&offset=1&status=failed&event_id=wev_x&job_id=42&run_id=r2&event_type=job.run.errored&since=2026-01-02T03:04:05Z&until=2030-01-01T00:00:00.5%2B02:00"
	want = map[string]any{"offset": float64(1), "limit": float64(5), "status": "failed", "event_id": "wev_x", "job_id": "42",
		"run_id": "r2", "event_type": "job.run.errored", "since": "2026-01-02T03:04:05Z", "until": "2030-01-01T00:00:00.5+02:00"}
	if got := search(t, f.searchURL(f.Account.ID, q), f.Writer).Filters; !mapsEqual(got, want) {
		t.Errorf("filters %v, want %v", got, want)
	}
}

func mapsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestSearchDeliveries_BadParametersNameTheField(t *testing.T) {
	f := newSearchFixture(t)
	cases := []struct{ query, field string }{
		{"status=bogus", "status"},
		{"event_type=job.run.done", "event_type"},
		{"since=yesterday", "since"},
		{"until=2026-13-01T00:00:00Z", "until"},
		{"since=2026-01-02", "since"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"offset=-1", "offset"},
		{"event_id=%00", "event_id"},
		{"job_id=%ff", "job_id"},
		{"run_id=" + strings.Repeat("r", 256), "run_id"},
	}
	for _, tc := range cases {
		t.Run(tc.query[:min(len(tc.query), 30)], func(t *testing.T) {
			resp := doJSON(t, http.MethodGet, f.searchURL(f.Account.ID, tc.query), f.Writer, nil)
			requireErrorEnvelope(t, resp, http.StatusBadRequest)
			if !strings.Contains(resp.Env.Status.DeveloperMessage, `"`+tc.field+`"`) {
				t.Errorf("developer_message %q does not name %s", resp.Env.Status.DeveloperMessage, tc.field)
			}
		})
	}
}

func TestSearchDeliveries_PermissionsAndIsolation(t *testing.T) {
	f := newSearchFixture(t)
	reader := f.mustCreateUser(t, f.Account.ID, "read_only", "member").Token // Team: every credential reads
	service := f.mustCreateServiceToken(t, f.Account.ID, "member").Token
	developerPlan := f.mustCreateAccount(t, webhooks.PlanDeveloper)
	devUser := f.mustCreateUser(t, developerPlan.ID, "developer", "account_admin").Token

	for _, tc := range []struct {
		name    string
		account int64
		token   string
		want    int
	}{
		{"Writer", f.Account.ID, f.Writer, http.StatusOK},
		{"Reader", f.Account.ID, reader, http.StatusOK},
		{"ServiceToken", f.Account.ID, service, http.StatusOK},
		{"NoCredential", f.Account.ID, "", http.StatusUnauthorized},
		{"AnotherAccountsUser", f.Account.ID, f.otherReader, http.StatusForbidden},
		{"UnknownAccount", 999999, f.Writer, http.StatusForbidden},
		{"DeveloperPlan", developerPlan.ID, devUser, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := doJSON(t, http.MethodGet, f.searchURL(tc.account, "run_id=r1"), tc.token, nil)
			if tc.want == http.StatusOK {
				requireStatus(t, resp, http.StatusOK)
			} else {
				requireErrorEnvelope(t, resp, tc.want)
			}
		})
	}
	// Each account sees its own deliveries only, however the ids overlap.
	otherDelivery := testenv.DeliveryID(t, f.DB.Pool, f.otherEventID, f.otherHook.ID)
	other := search(t, f.searchURL(f.other.ID, "job_id=42&run_id=r1"), f.otherReader)
	if want := []string{otherDelivery}; !slices.Equal(other.IDs, want) {
		t.Errorf("other account: %v, want %v", other.IDs, want)
	}
	own := search(t, f.searchURL(f.Account.ID, "run_id=r1"), reader)
	if len(own.IDs) != 2 || slices.Contains(own.IDs, otherDelivery) {
		t.Errorf("own account: %v", own.IDs)
	}
}
