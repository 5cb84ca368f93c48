package worker_test

import (
	"encoding/json"
	"fmt"

	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/slack-go/slack"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/formats"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// pagerDuty is a loopback receiver shaped like PagerDuty's Events API v2:
// it keeps incidents by dedup_key (a trigger opens one or adds to the
// open one, a resolve closes it), answers 202 to an event it takes and 400
// to one it refuses (an unknown routing key, a malformed event).
type pagerDuty struct {
	*receiver
	routingKey string

	mu        sync.Mutex
	incidents map[string]*incident
	opened    int // incidents opened
}

type incident struct {
	triggers int
	resolved bool
}

func newPagerDuty(t *testing.T, routingKey string) *pagerDuty {
	t.Helper()
	pd := &pagerDuty{routingKey: routingKey, incidents: map[string]*incident{}}
	pd.receiver = newReceiver(t, pd.respond)
	return pd
}

func (pd *pagerDuty) respond(_ int, w http.ResponseWriter, r *http.Request) {
	var ev struct {
		RoutingKey  string `json:"routing_key"`
		EventAction string `json:"event_action"`
		DedupKey    string `json:"dedup_key"`
		Payload     *struct {
			Summary  string `json:"summary"`
			Source   string `json:"source"`
			Severity string `json:"severity"`
		} `json:"payload"`
	}
	refuse := func(why string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "invalid event", "message": "Event object is invalid", "errors": []string{why}})
	}
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
		refuse("not JSON")
		return
	}
	switch {
	case ev.RoutingKey != pd.routingKey:
		refuse("Invalid routing key")
		return
	case ev.DedupKey == "" || len(ev.DedupKey) > 255:
		refuse("'dedup_key' is invalid")
		return
	case ev.EventAction == "trigger" && (ev.Payload == nil || ev.Payload.Summary == "" || len(ev.Payload.Summary) > 1024 ||
		ev.Payload.Source == "" || ev.Payload.Severity != "error"):
		refuse("'payload' is invalid")
		return
	case ev.EventAction != "trigger" && ev.EventAction != "resolve":
		refuse("'event_action' is invalid")
		return
	}
	pd.mu.Lock()
	inc := pd.incidents[ev.DedupKey]
	switch ev.EventAction {
	case "trigger":
		if inc == nil || inc.resolved {
			inc = &incident{}
			pd.incidents[ev.DedupKey] = inc
			pd.opened++
		}
		inc.triggers++
	case "resolve":
		if inc != nil {
			inc.resolved = true
		}
	}
	pd.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "message": "Event processed", "dedup_key": ev.DedupKey})
}

func (pd *pagerDuty) state(dedupKey string) (incident, int) {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if inc := pd.incidents[dedupKey]; inc != nil {
		return *inc, pd.opened
	}
	return incident{}, pd.opened
}

func formatSettings(format, routingKey string) webhooksettings.Update {
	u := webhooksettings.Update{Format: &format}
	if routingKey != "" {
		u.PagerDutyRoutingKey = &routingKey
	}
	return u
}

// TestDeliver_PagerDuty: a PagerDuty webhook's job that fails three times
// and then succeeds opens one incident (one dedup_key for the webhook and
// job) and resolves it; the routing key reaches PagerDuty in the signed
// bytes and never the stored body; PagerDuty's 400 is final after one
// attempt and its 429 is retried; a test delivery sends the test job's
// event.
//
// With state-change routing (always on for pagerduty) only the first
// failure and the recovery are delivered; without it, each failure is a
// trigger that PagerDuty adds to the open incident: one incident either
// way, and the test holds for both.
func TestDeliver_PagerDuty(t *testing.T) {
	const key = "R0UTING0KEY0E2E0000000000000000a"
	e := newEnv(t, true, map[string]string{"RUN_URL_TEMPLATE": "https://ci.example.com/deploy/{accountId}/runs/{runId}"})
	pd := newPagerDuty(t, key)
	types := []string{webhooks.EventRunCompleted, webhooks.EventRunErrored}
	sub, secret := e.subscribe(pd.URL+"/v2/enqueue", types, nil, true)
	pd.setSecret(secret)
	e.setSettings(sub.ID, formatSettings(webhooksettings.FormatPagerDuty, key))
	other := newPagerDuty(t, key) // its own host: its refusals are its own
	wrong, _ := e.subscribe(other.URL+"/v2/enqueue", types, nil, true)
	e.setSettings(wrong.ID, formatSettings(webhooksettings.FormatPagerDuty, "NOT0THE0KEY"))

	busy := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusTooManyRequests) // PagerDuty's rate limit: retried
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	limited, _ := e.subscribe(busy.URL+"/v2/enqueue", types, nil, true)
	e.setSettings(limited.ID, formatSettings(webhooksettings.FormatPagerDuty, key))

	dedup := formats.DedupKey(sub.ID, "42")
	var delivered []deliveries.Delivery // to sub, in order
	check := func(step string, d deliveries.Delivery, ok bool) {
		t.Helper()
		if !ok {
			return
		}
		delivered = append(delivered, d)
		if d.Status != deliveries.StatusSucceeded || d.LastStatusCode != http.StatusAccepted {
			t.Fatalf("%s: delivery %s %d %s", step, d.Status, d.LastStatusCode, d.LastError)
		}
	}
	var wrongs, limiteds []deliveries.Delivery
	for i := range 3 {
		got := e.ingestRouted(webhooks.EventRunErrored, 42, sub.ID, wrong.ID, limited.ID)
		if i == 0 && !got[sub.ID].ok {
			t.Fatal("the job's first failure was not delivered")
		}
		check(fmt.Sprintf("failure %d", i+1), got[sub.ID].d, got[sub.ID].ok)
		if inc, opened := pd.state(dedup); inc.resolved || opened != 1 {
			t.Fatalf("after failure %d: incident %+v, %d opened", i+1, inc, opened)
		}
		wrongs, limiteds = appendIf(wrongs, got[wrong.ID]), appendIf(limiteds, got[limited.ID])
	}
	got := e.ingestRouted(webhooks.EventRunCompleted, 42, sub.ID, wrong.ID, limited.ID)
	if !got[sub.ID].ok {
		t.Fatal("the job's recovery was not delivered")
	}
	check("recovery", got[sub.ID].d, true)
	wrongs, limiteds = appendIf(wrongs, got[wrong.ID]), appendIf(limiteds, got[limited.ID])
	if inc, opened := pd.state(dedup); !inc.resolved || opened != 1 {
		t.Fatalf("after the recovery: incident %+v, %d opened; want one, resolved", inc, opened)
	}
	t.Logf("one incident %s: %d trigger(s) delivered, then resolved", dedup, func() int { inc, _ := pd.state(dedup); return inc.triggers }())

	for _, r := range pd.got() {
		if !r.Signed || !strings.HasPrefix(string(r.Body), `{"routing_key":"`+key+`",`) {
			t.Errorf("PagerDuty got an unsigned body or one without the key: signed %v %.60s", r.Signed, r.Body)
		}
		if !strings.Contains(string(r.Body), `"client_url":"https://ci.example.com/deploy/`) {
			t.Errorf("the event has no link to its run: %s", r.Body)
		}
	}
	for _, d := range delivered {
		if !formats.IsPagerDuty(d.Payload) || strings.Contains(string(d.Payload), key) {
			t.Errorf("the stored body of %s holds the key or is not the masked event: %.80s", d.ID, d.Payload)
		}
	}
	for _, w := range wrongs {
		if w.Status != deliveries.StatusFailed || w.AttemptCount != 1 || w.LastStatusCode != http.StatusBadRequest {
			t.Errorf("PagerDuty's 400 was not final: %s after %d attempts (%d)", w.Status, w.AttemptCount, w.LastStatusCode)
		}
	}
	if len(wrongs) == 0 || len(limiteds) == 0 {
		t.Fatalf("the other webhooks got %d and %d deliveries", len(wrongs), len(limiteds))
	}
	if d := limiteds[0]; d.Status != deliveries.StatusSucceeded || d.AttemptCount != 2 {
		t.Errorf("after PagerDuty's 429: %s after %d attempts, want succeeded after 2", d.Status, d.AttemptCount)
	}

	code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/test"), e.token, nil)
	if code != http.StatusOK || out["data"].(map[string]any)["verification_status_code"] != "202" {
		t.Fatalf("test = %d %v", code, out)
	}
	// The sample is the webhook's first event type, job.run.completed: a
	// resolve of the test job's incident.
	last := pd.got()[len(pd.got())-1]
	test := mustJSON(t, last.Body)
	if test["event_action"] != "resolve" || test["dedup_key"] != formats.DedupKey(sub.ID, "0") || test["routing_key"] != key || !last.Signed {
		t.Fatalf("the test delivery went out as %s (signed %v)", last.Body, last.Signed)
	}
}

// TestDeliver_SlackAndTeams: a webhook's format shapes its deliveries and
// its test; the receiver gets, signed, what Recent Deliveries shows.
func TestDeliver_SlackAndTeams(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	slackSub, secret := e.subscribe(rc.URL+"/slack", allTypes, nil, true)
	rc.setSecret(secret)
	e.setSettings(slackSub.ID, formatSettings(webhooksettings.FormatSlack, ""))
	teamsSub, _ := e.subscribe(rc.URL+"/teams", allTypes, nil, true)
	e.setSettings(teamsSub.ID, formatSettings(webhooksettings.FormatTeams, ""))

	inactive, _ := e.subscribe(rc.URL+"/inactive", allTypes, nil, false)
	e.setSettings(inactive.ID, formatSettings(webhooksettings.FormatSlack, ""))

	ev := e.ingest(webhooks.EventRunErrored, 42, "", slackSub.ID, teamsSub.ID, inactive.ID)
	// A skipped delivery's body is recorded as it would have been sent.
	if d := e.record(ev, inactive.ID); d.Status != deliveries.StatusSkipped || !strings.HasPrefix(string(d.Payload), `{"text":"Job Nightly build errored`) {
		t.Errorf("the skipped delivery is %s with body %.60s", d.Status, d.Payload)
	}
	bodies := map[string][]byte{}
	for _, r := range rc.got() {
		bodies[r.Path] = r.Body
	}
	var msg slack.WebhookMessage
	if err := json.Unmarshal(bodies["/slack"], &msg); err != nil || msg.Blocks == nil || !strings.Contains(msg.Text, "Nightly build errored") {
		t.Fatalf("Slack got %v: %s", err, bodies["/slack"])
	}
	if d := e.record(ev, slackSub.ID); string(d.Payload) != string(bodies["/slack"]) {
		t.Errorf("Recent Deliveries shows another body than Slack got:\n%s\n%s", d.Payload, bodies["/slack"])
	}
	var card struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string `json:"contentType"`
			Content     struct {
				Version string `json:"version"`
			} `json:"content"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(bodies["/teams"], &card); err != nil || card.Type != "message" || len(card.Attachments) != 1 ||
		card.Attachments[0].Content.Version != "1.4" {
		t.Fatalf("Teams got %v: %s", err, bodies["/teams"])
	}

	code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+slackSub.ID+"/test"), e.token, nil)
	if code != http.StatusOK {
		t.Fatalf("test = %d %v", code, out)
	}
	last := rc.got()[len(rc.got())-1]
	if err := json.Unmarshal(last.Body, &msg); err != nil || msg.Blocks == nil || !last.Signed {
		t.Fatalf("the test went out as %s (signed %v)", last.Body, last.Signed)
	}
}

type routed struct {
	d  deliveries.Delivery
	ok bool // the event has a delivery to the webhook
}

// ingestRouted posts an event and, for each of subs, waits until its
// delivery is final, or finds it has none: once ingestion answers, the
// deliveries it made are stored, so one missing was not made (routing by
// state change, a filter).
func (e *env) ingestRouted(eventType string, jobID int64, subs ...string) map[string]routed {
	e.t.Helper()
	ev := e.post(eventType, jobID, "")
	out := map[string]routed{}
	for _, sub := range subs {
		if _, made := e.madeDelivery(ev, sub); !made {
			continue
		}
		out[sub] = routed{d: e.waitDelivery(ev, sub), ok: true}
	}
	return out
}

func appendIf(list []deliveries.Delivery, r routed) []deliveries.Delivery {
	if r.ok {
		return append(list, r.d)
	}
	return list
}

// TestFeed_BodiesInTheWebhooksFormat: a delivery not attempted yet gets its
// body from the feed, built in the webhook's format as its first attempt
// would build it.
func TestFeed_BodiesInTheWebhooksFormat(t *testing.T) {
	e := newEnv(t, false, nil) // no worker: the deliveries stay unattempted
	sub, _ := e.subscribe("http://127.0.0.1:9/teams", allTypes, nil, true)
	e.setSettings(sub.ID, formatSettings(webhooksettings.FormatTeams, ""))
	e.post(webhooks.EventRunErrored, 42, "")
	items := e.readFeed(sub.ID, 0)
	if len(items) != 1 || !strings.HasPrefix(items[0].Body, `{"type":"message","attachments":[{"contentType":"application/vnd.microsoft.card.adaptive"`) {
		t.Fatalf("feed = %+v", items)
	}
}
