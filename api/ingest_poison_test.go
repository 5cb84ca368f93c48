package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/eventdata"
)

// TestIngest_PoisonSenderFailsOnlyItself: 23 senders post good events for
// account A while one posts events whose jobId holds a NUL for account B,
// all at once, so their events share group commits. Every good event is
// accepted and stored; every poison one is a 400 naming data.jobId, never a
// 503 its sender would retry forever.
func TestIngest_PoisonSenderFailsOnlyItself(t *testing.T) {
	const (
		goodSenders   = 23
		eventsEach    = 40
		maxPoisonPost = 2000
	)
	a := newTestAPI(t, withIngestion(t, nil))
	good := a.mustCreateAccount(t, webhooks.PlanTeam)
	bad := a.mustCreateAccount(t, webhooks.PlanTeam)
	url := a.URL + "/internal/v1/job-run-events"
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: goodSenders + 1}}
	t.Cleanup(client.CloseIdleConnections)

	var (
		mu         sync.Mutex
		goodStatus = map[int]int{}
		badStatus  = map[int]int{}
		badBodies  []string
		errs       []error
	)
	record := func(status map[int]int, code int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return
		}
		status[code]++
	}
	var goodDone atomic.Bool
	var poisonWG, goodWG sync.WaitGroup
	poisonWG.Add(1)
	go func() {
		defer poisonWG.Done()
		for i := 0; i < maxPoisonPost && !goodDone.Load(); i++ {
			b := ingestBody(bad.ID)
			b["eventId"] = fmt.Sprintf("poison-%d", i)
			b["data"].(map[string]any)["jobId"] = "4\x002" // sent as "4\u00002"
			code, body, err := postJSON(client, url, b)
			record(badStatus, code, err)
			if err == nil && code != http.StatusBadRequest {
				mu.Lock()
				badBodies = append(badBodies, fmt.Sprintf("%d %s", code, body))
				mu.Unlock()
			} else if err == nil && !namesField(body, "data.jobId") {
				mu.Lock()
				badBodies = append(badBodies, fmt.Sprintf("400 without the field: %s", body))
				mu.Unlock()
			}
		}
	}()
	for s := range goodSenders {
		goodWG.Add(1)
		go func() {
			defer goodWG.Done()
			for i := range eventsEach {
				b := ingestBody(good.ID)
				b["eventId"] = fmt.Sprintf("good-%d-%d", s, i)
				code, _, err := postJSON(client, url, b)
				record(goodStatus, code, err)
			}
		}()
	}
	goodWG.Wait()
	goodDone.Store(true)
	poisonWG.Wait()

	if len(errs) > 0 {
		t.Fatalf("%d requests failed, first: %v", len(errs), errs[0])
	}
	t.Logf("good events: %v; poison events: %v", goodStatus, badStatus)
	if goodStatus[http.StatusAccepted] != goodSenders*eventsEach {
		t.Errorf("good events answered %v, want all %d 202", goodStatus, goodSenders*eventsEach)
	}
	if badStatus[http.StatusBadRequest] == 0 || len(badBodies) > 0 {
		t.Errorf("poison events answered %v, want only 400 naming data.jobId; first others: %v", badStatus, first(badBodies, 3))
	}
	if n := countEvents(t, a, good.ID); n != goodSenders*eventsEach {
		t.Errorf("%d good events stored, want %d", n, goodSenders*eventsEach)
	}
	if n := countEvents(t, a, bad.ID); n != 0 {
		t.Errorf("%d poison events stored, want none", n)
	}
}

// postJSON posts body with the internal token and returns the status and
// body; safe to call from any goroutine (no t.Fatal).
func postJSON(client *http.Client, url string, body any) (int, []byte, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testInternalToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// countEvents counts the stored events of an account.
func countEvents(t *testing.T, a *testAPI, accountID int64) int {
	t.Helper()
	var n int
	if err := a.DB.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM webhook_events WHERE account_id = $1", accountID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// namesField reports whether body is an error envelope whose messages name
// field.
func namesField(body []byte, field string) bool {
	var env testEnvelope
	return json.Unmarshal(body, &env) == nil && env.Status.UserMessage != "" &&
		strings.Contains(env.Status.DeveloperMessage, `"`+field+`"`)
}

func first(s []string, n int) []string {
	return s[:min(n, len(s))]
}

// textFaults are the raw JSON string contents (between the quotes, sent as
// is) that no stored string may hold.
var textFaults = []struct{ name, raw string }{
	{"NUL", `4\u00002`},
	{"InvalidUTF8", "caf\xe9"},
	{"LoneHighSurrogate", `a\ud800b`},
	{"LoneLowSurrogate", `\udc00`},
}

// textFields are the places of an ingested event where a string is read,
// each with the field its 400 names.
var textFields = []struct{ place, field string }{
	{"eventId", "eventId"},
	{"eventType", "eventType"},
	{"data.jobId", "data.jobId"}, {"data.jobName", "data.jobName"}, {"data.runId", "data.runId"},
	{"data.environmentId", "data.environmentId"}, {"data.environmentName", "data.environmentName"},
	{"data.projectName", "data.projectName"}, {"data.projectId", "data.projectId"},
	{"data.runStatus", "data.runStatus"}, {"data.runStatusMessage", "data.runStatusMessage"},
	{"data.runReason", "data.runReason"}, {"data.runStartedAt", "data.runStartedAt"},
	{"data.dbtVersion", "data.dbtVersion"}, {"data.toolVersion", "data.toolVersion"},
	{"data.unknownMember", "data.unknownMember"},
	{"data member name", "data"},
}

// rawIngestBody is a valid event of accountID with the string at place set
// to the raw JSON string contents raw: json.Marshal would repair invalid
// UTF-8, and these bodies must carry it.
func rawIngestBody(t *testing.T, accountID int64, place, raw string) []byte {
	t.Helper()
	const placeholder = `"@@placeholder@@"`
	b := ingestBody(accountID)
	data := b["data"].(map[string]any)
	switch {
	case place == "data member name":
		data["@@placeholder@@"] = "x"
	case strings.HasPrefix(place, "data."):
		data[strings.TrimPrefix(place, "data.")] = "@@placeholder@@"
	default:
		b[place] = "@@placeholder@@"
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(placeholder)) {
		t.Fatalf("no placeholder in %s", out)
	}
	return bytes.Replace(out, []byte(placeholder), []byte(`"`+raw+`"`), 1)
}

// TestIngest_RefusesTextThatCannotBeStored: a NUL, invalid UTF-8 or a lone
// surrogate escape in any string of an event is a 400 naming the field, and
// nothing is stored; encoding/json would have turned the last two into
// U+FFFD unseen.
func TestIngest_RefusesTextThatCannotBeStored(t *testing.T) {
	a := newTestAPI(t, withIngestion(t, nil))
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	url := a.URL + "/internal/v1/job-run-events"
	for _, f := range textFields {
		for _, fault := range textFaults {
			t.Run(f.place+"/"+fault.name, func(t *testing.T) {
				r := doRequest(t, http.MethodPost, url, internalBearer(testInternalToken), rawIngestBody(t, acct.ID, f.place, fault.raw))
				requireErrorEnvelope(t, r, http.StatusBadRequest)
				if !namesField(r.Body, f.field) {
					t.Errorf("400 does not name %s: %s", f.field, r.Body)
				}
			})
		}
	}
	if n := countEvents(t, a, acct.ID); n != 0 {
		t.Errorf("%d events stored, want none", n)
	}
	t.Run("SurrogatePairAndReplacementCharacterAccepted", func(t *testing.T) {
		r := doRequest(t, http.MethodPost, url, internalBearer(testInternalToken),
			rawIngestBody(t, acct.ID, "data.jobName", `nightly \ud83d\ude00 \ufffd`))
		requireStatus(t, r, http.StatusAccepted)
		var data []byte
		if err := a.DB.Pool.QueryRow(context.Background(),
			"SELECT data FROM webhook_events WHERE account_id = $1", acct.ID).Scan(&data); err != nil {
			t.Fatal(err)
		}
		d, err := eventdata.Unmarshal(data)
		if err != nil || d.JobName != "nightly 😀 \uFFFD" {
			t.Errorf("stored jobName %q (%v), want the text sent", d.JobName, err)
		}
	})
}

// TestIngestBatch_TextThatCannotBeStoredIsRefusedPerEvent: in a batch, each
// event with such text gets its own error naming the field; the good
// events around them are stored.
func TestIngestBatch_TextThatCannotBeStoredIsRefusedPerEvent(t *testing.T) {
	a := newTestAPI(t, withIngestion(t, nil))
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	events := [][]byte{}
	wantField := map[int]string{}
	good := 0
	addGood := func() {
		b := ingestBody(acct.ID)
		b["eventId"] = fmt.Sprintf("good-%d", good)
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		events, good = append(events, raw), good+1
	}
	addGood()
	for _, f := range textFields {
		for _, fault := range textFaults {
			wantField[len(events)] = f.field
			events = append(events, rawIngestBody(t, acct.ID, f.place, fault.raw))
			addGood()
		}
	}
	body := append([]byte(`{"events":[`), bytes.Join(events, []byte(","))...)
	body = append(body, "]}"...)
	r := doRequest(t, http.MethodPost, a.URL+"/internal/v1/job-run-events/batch", internalBearer(testInternalToken), body)
	requireStatus(t, r, http.StatusAccepted)
	var out batchResponse
	r.decodeData(t, &out)
	if len(out.Results) != len(events) {
		t.Fatalf("%d results for %d events", len(out.Results), len(events))
	}
	for i, res := range out.Results {
		field, bad := wantField[i]
		switch {
		case bad && (res.Error == nil || res.Error.Field != field || res.Error.UserMessage == "" || res.EventID != ""):
			t.Errorf("result %d = %+v, want an error naming %s", i, res, field)
		case !bad && (res.Error != nil || res.EventID == ""):
			t.Errorf("result %d = %+v, want accepted", i, res)
		}
	}
	if n := countEvents(t, a, acct.ID); n != good {
		t.Errorf("%d events stored, want the %d good ones", n, good)
	}
}
