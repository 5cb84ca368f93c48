package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/feed"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// feedEntry is a feed item as the API returns it.
type feedEntry struct {
	Sequence      string `json:"sequence"`
	DeliveryID    string `json:"delivery_id"`
	EventID       string `json:"event_id"`
	EventType     string `json:"event_type"`
	Status        string `json:"status"`
	CreatedAt     string `json:"created_at"`
	Body          string `json:"body"`
	Authorization string `json:"authorization"`
}

type feedExtra struct {
	NextAfter string `json:"next_after"`
}

// feedAPI is an API with subscriptions and the feed over one store.
type feedAPI struct {
	*subsAPI
	store *deliveries.Store
}

func newFeedAPI(t *testing.T) *feedAPI {
	t.Helper()
	f := &feedAPI{subsAPI: &subsAPI{}}
	withSubs := withSubscriptions(t, &f.Box, nil)
	f.testAPI = newTestAPI(t, withSubs, func(a *testAPI, d *api.Deps) {
		f.store = deliveries.NewStore(a.DB.Pool)
		d.Feed = feed.NewService(f.store, f.Box)
	})
	f.Account = f.mustCreateAccount(t, webhooks.PlanTeam)
	f.Writer = f.mustCreateUser(t, f.Account.ID, "developer", "member").Token
	return f
}

func (f *feedAPI) feedURL(accountID int64, webhookID, query string) string {
	return f.subURL(accountID, webhookID) + "/feed" + query
}

// ingest stores n job-run events of job 42 for the account.
func (f *feedAPI) ingest(t *testing.T, prefix string, n int) {
	t.Helper()
	evs := make([]deliveries.NewEvent, n)
	for i := range evs {
		evs[i] = deliveries.NewEvent{ID: fmt.Sprintf("wev_%s%03d", prefix, i), AccountID: f.Account.ID, Type: webhooks.EventRunCompleted,
			JobID: "42", RunID: strconv.Itoa(i), Data: webhooks.RunData{JobID: "42", RunID: strconv.Itoa(i)}, ToolName: "dbt"}
	}
	if _, _, err := f.store.IngestEvents(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
}

// readFeed fetches every page after after with limit, checking each.
func (f *feedAPI) readFeed(t *testing.T, token, webhookID string, after, limit int) []feedEntry {
	t.Helper()
	var all []feedEntry
	for {
		r := doJSON(t, http.MethodGet, f.feedURL(f.Account.ID, webhookID, fmt.Sprintf("?after=%d&limit=%d", after, limit)), token, nil)
		requireStatus(t, r, http.StatusOK)
		var page []feedEntry
		r.decodeData(t, &page)
		var extra feedExtra
		if err := json.Unmarshal(r.Env.Extra, &extra); err != nil {
			t.Fatalf("extra %s: %v", r.Env.Extra, err)
		}
		if len(page) > limit {
			t.Fatalf("page of %d, limit %d", len(page), limit)
		}
		if len(page) == 0 {
			if extra.NextAfter != strconv.Itoa(after) {
				t.Errorf("empty page's next_after %q, want %d", extra.NextAfter, after)
			}
			return all
		}
		if extra.NextAfter != page[len(page)-1].Sequence {
			t.Errorf("next_after %q, want the page's last sequence %s", extra.NextAfter, page[len(page)-1].Sequence)
		}
		all = append(all, page...)
		after, _ = strconv.Atoi(extra.NextAfter)
	}
}

// TestFeed_PagesInOrderWithBodiesThatVerify: the feed lists the webhook's
// deliveries 1..n in order, a page at a time; each body is what its
// attempts send (fixed by the feed when not attempted yet, kept once
// attempted) and verifies with the webhook's current secret, also after a
// rotation; a reader may read it; after=N starts after N.
func TestFeed_PagesInOrderWithBodiesThatVerify(t *testing.T) {
	f := newFeedAPI(t)
	sub := f.mustCreateSub(t, validBody())
	f.ingest(t, "feed", 7)
	// The third delivery is attempted: its body is the one recorded.
	third := testenv.DeliveryID(t, f.DB.Pool, "wev_feed002", sub.ID)
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{DeliveryID: third, SubscriptionID: sub.ID,
		AttemptNumber: 1, StartedAt: time.Now(), StatusCode: 503, Status: deliveries.StatusRetrying, RetryIn: time.Hour,
		Body: deliveries.FixedBody{Payload: []byte(`{"sent":"as is"}`)}}}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	reader := f.mustCreateUser(t, f.Account.ID, "read_only", "member").Token

	entries := f.readFeed(t, reader, sub.ID, 0, 3)
	if len(entries) != 7 {
		t.Fatalf("%d entries, want 7: %+v", len(entries), entries)
	}
	for i, e := range entries {
		wantID := testenv.DeliveryID(t, f.DB.Pool, fmt.Sprintf("wev_feed%03d", i), sub.ID)
		if e.Sequence != strconv.Itoa(i+1) || e.DeliveryID != wantID || e.EventID != fmt.Sprintf("wev_feed%03d", i) || e.EventType != webhooks.EventRunCompleted {
			t.Errorf("entry %d: %+v, want sequence %d of %s", i, e, i+1, wantID)
		}
		if !webhooks.VerifySignature(*sub.HMACSecret, []byte(e.Body), e.Authorization) {
			t.Errorf("entry %d: authorization %q does not verify its body %q", i, e.Authorization, e.Body)
		}
		stored, err := f.store.Delivery(t.Context(), f.Account.ID, sub.ID, e.DeliveryID)
		if err != nil || string(stored.Payload) != e.Body {
			t.Errorf("entry %d: body %q, stored %q (err %v): the feed shows what is sent", i, e.Body, stored.Payload, err)
		}
	}
	if entries[2].Body != `{"sent":"as is"}` || entries[2].Status != deliveries.StatusRetrying {
		t.Errorf("attempted entry %+v, want its recorded body and status", entries[2])
	}
	if entries[0].Status != deliveries.StatusPending || !json.Valid([]byte(entries[0].Body)) {
		t.Errorf("entry not attempted %+v, want pending with a built JSON body", entries[0])
	}

	if tail := f.readFeed(t, reader, sub.ID, 5, 500); len(tail) != 2 || tail[0].Sequence != "6" || tail[1].Sequence != "7" {
		t.Errorf("after=5: %+v, want 6 and 7", tail)
	}

	r := doJSON(t, http.MethodPost, f.subURL(f.Account.ID, sub.ID)+"/secret/rotate", f.Writer, map[string]any{})
	requireStatus(t, r, http.StatusOK)
	var rotated struct {
		HMACSecret string `json:"hmac_secret"`
	}
	r.decodeData(t, &rotated)
	again := f.readFeed(t, reader, sub.ID, 0, 500)
	for i, e := range again {
		if e.Body != entries[i].Body || !webhooks.VerifySignature(rotated.HMACSecret, []byte(e.Body), e.Authorization) {
			t.Errorf("after rotation, entry %d does not verify with the current secret: %+v", i, e)
		}
	}
}

// TestFeed_RefusesBadWindowsAndOtherAccounts: after and limit out of range
// are 400 naming the field; another account's webhook is 404; a webhook
// without deliveries has an empty feed.
func TestFeed_RefusesBadWindowsAndOtherAccounts(t *testing.T) {
	f := newFeedAPI(t)
	sub := f.mustCreateSub(t, validBody())
	for _, q := range []string{"?after=-1", "?after=x", "?after=1.5", "?limit=0", "?limit=501", "?limit=ten"} {
		r := doJSON(t, http.MethodGet, f.feedURL(f.Account.ID, sub.ID, q), f.Writer, nil)
		requireErrorEnvelope(t, r, http.StatusBadRequest)
	}
	other := f.mustCreateAccount(t, webhooks.PlanTeam)
	outsider := f.mustCreateUser(t, other.ID, "developer", "member").Token
	requireErrorEnvelope(t, doJSON(t, http.MethodGet, f.feedURL(other.ID, sub.ID, ""), outsider, nil), http.StatusNotFound)
	requireErrorEnvelope(t, doJSON(t, http.MethodGet, f.feedURL(f.Account.ID, "wsu_missing", ""), f.Writer, nil), http.StatusNotFound)

	r := doJSON(t, http.MethodGet, f.feedURL(f.Account.ID, sub.ID, ""), f.Writer, nil)
	requireStatus(t, r, http.StatusOK)
	if string(r.Env.Data) != "[]" {
		t.Errorf("empty feed data %s, want []", r.Env.Data)
	}
}
