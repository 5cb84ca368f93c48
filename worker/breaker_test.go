package worker_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/webhooksettings"
	"github.com/jobhooks/jobhooks/workflows"
)

// breakerConfig shortens the breaker's and incidents' times for tests.
func breakerConfig(extra map[string]string) map[string]string {
	cfg := map[string]string{
		"DELIVERY_BREAKER_THRESHOLD":   "5",
		"DELIVERY_BREAKER_PROBE_FIRST": "250ms",
		"DELIVERY_BREAKER_PROBE_MAX":   "1s",
		"DELIVERY_BREAKER_RAMP_START":  "4",
		"DELIVERY_BREAKER_RAMP_FULL":   "64",
		"INCIDENT_NOTICE_AFTER":        "1h",
		"INCIDENT_QUIET":               "1s",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return cfg
}

// probesWithin is the most probes a breaker sends in d after it opened:
// one per backoff step (first, doubling, up to max).
func probesWithin(d, first, most time.Duration) int {
	n, at, step := 0, time.Duration(0), first
	for {
		at += step
		if at > d {
			return n
		}
		n++
		step = min(2*step, most)
	}
}

// TestBreaker_OutageThenRecovery: a receiver goes down; its webhook holds
// its deliveries during an outage (its delivery settings' on_outage
// "hold"). After five failed attempts its breaker opens; for the rest of an outage far
// longer than a delivery's whole retry schedule (0.5 s here) it sees one
// request per probe step, always the oldest pending delivery, while new
// events keep coming. It comes back: the next probe closes the breaker,
// every delivery accepted during the outage arrives, none fails, and the
// drain ramps up (at most RampStart in its first second).
func TestBreaker_OutageThenRecovery(t *testing.T) {
	e := newEnv(t, true, breakerConfig(nil))
	var down atomic.Bool
	down.Store(true)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, []int64{7}, true)
	rc.setSecret(secret)
	hold := deliveries.OnOutageHold
	e.setSettings(sub.ID, webhooksettings.Update{OnOutage: &webhooksettings.OnOutage{Mode: &hold}})
	ids := []string{e.post(webhooks.EventRunCompleted, 7, "")}
	waitFor(t, func() bool {
		st, err := e.store.Breaker(t.Context(), sub.ID)
		return err == nil && st.Open
	})
	opened := time.Now()
	beforeOpen := len(rc.got())
	if beforeOpen != 5 {
		t.Errorf("%d attempts before the breaker opened, want the threshold, 5", beforeOpen)
	}
	for range 30 {
		ids = append(ids, e.post(webhooks.EventRunCompleted, 7, ""))
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Until(opened.Add(5 * time.Second)))
	during := rc.got()[beforeOpen:]
	outage := time.Since(opened)
	if most := probesWithin(outage, 250*time.Millisecond, time.Second) + 1; len(during) > most || len(during) < 2 {
		t.Errorf("the dead receiver got %d requests in the %s the breaker was open, want one per probe step (at most %d)",
			len(during), outage.Round(time.Millisecond), most)
	}
	oldest := e.deliveryID(ids[0], sub.ID)
	for _, r := range during {
		if got := r.Header.Get(webhooks.HeaderDeliveryID); got != oldest {
			t.Errorf("a probe was delivery %s, want the oldest pending (%s)", got, oldest)
		}
	}
	if st, _ := e.store.Breaker(t.Context(), sub.ID); !st.Open || !st.Held || st.Backlog != int64(len(ids)) || st.FailedProbes < 1 {
		t.Errorf("breaker during the outage %+v, want open with the %d deliveries waiting", st, len(ids))
	}

	down.Store(false)
	up := time.Now()
	for _, id := range ids {
		d := e.waitDelivery(id, sub.ID)
		if d.Status != deliveries.StatusSucceeded {
			t.Errorf("delivery %s accepted during the outage: %s after %d attempts, want succeeded", id, d.Status, d.AttemptCount)
		}
	}
	drained := time.Since(up)
	all := rc.got()
	// The answered probe closed the breaker: the drain starts there.
	closedAt := all[beforeOpen+len(during)].ArrivedAt
	inFirstSecond := 0
	for _, r := range all[beforeOpen+len(during)+1:] {
		if r.ArrivedAt.Sub(closedAt) < 900*time.Millisecond {
			inFirstSecond++
		}
	}
	if inFirstSecond > 4 {
		t.Errorf("%d requests in the drain's first second, want at most the ramp's start, 4", inFirstSecond)
	}
	first := e.record(ids[0], sub.ID)
	if first.AttemptCount <= deliveries.MaxAttempts-1 || first.Status != deliveries.StatusSucceeded {
		t.Errorf("the probed delivery: %s after %d attempts, want succeeded after its 5 failures and its probes", first.Status, first.AttemptCount)
	}
	t.Logf("outage %s: %d requests before the breaker opened, %d probes while open; after recovery %d deliveries drained in %s (ramp: %d in the first second)",
		outage.Round(time.Millisecond), beforeOpen, len(during), len(ids), drained.Round(time.Millisecond), inFirstSecond)
}

// TestBreaker_ProbeNowUpdate: an operator's ProbeNow Update to the held
// webhook's lane (the operator's default here: DELIVERY_ON_OUTAGE=hold)
// sends the probe at once instead of after the step (a minute here); on a
// closed breaker it is refused.
func TestBreaker_ProbeNowUpdate(t *testing.T) {
	e := newEnv(t, true, breakerConfig(map[string]string{
		"DELIVERY_BREAKER_THRESHOLD": "2", "DELIVERY_BREAKER_PROBE_FIRST": "1m", "DELIVERY_BREAKER_PROBE_MAX": "1m",
		"DELIVERY_ON_OUTAGE": "hold",
	}))
	var down atomic.Bool
	down.Store(true)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, []int64{8}, true)
	rc.setSecret(secret)
	id := e.post(webhooks.EventRunStarted, 8, "")
	waitFor(t, func() bool { // held: its lane has been started
		st, err := e.store.Breaker(t.Context(), sub.ID)
		return err == nil && st.Held
	})
	down.Store(false)
	var res map[string]any
	var err error
	waitFor(t, func() bool { // the lane starts just after the route is held
		res, err = e.update(workflows.LaneWorkflowID(sub.ID), workflows.ProbeNowUpdate, workflows.WebhookRequest{WebhookID: sub.ID})
		return err == nil || !strings.Contains(err.Error(), "workflow not found")
	})
	if err != nil || res["route"] != deliveries.RouteHeld {
		t.Fatalf("ProbeNow: %v (err %v)", res, err)
	}
	start := time.Now()
	if d := e.waitDelivery(id, sub.ID); d.Status != deliveries.StatusSucceeded {
		t.Fatalf("after ProbeNow: %s", d.Status)
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Errorf("the probe went %s after ProbeNow, not at once", waited)
	}
	waitFor(t, func() bool { st, _ := e.store.Breaker(t.Context(), sub.ID); return !st.Open })
	if _, err := e.update(workflows.LaneWorkflowID(sub.ID), workflows.ProbeNowUpdate, workflows.WebhookRequest{WebhookID: sub.ID}); err == nil ||
		!strings.Contains(err.Error(), "not open") {
		t.Errorf("ProbeNow on a closed breaker: %v, want refused (not open)", err)
	}
}

// postRun posts an event of a given run and returns its id.
func (e *env) postRun(eventType string, jobID, runID int64) string {
	e.t.Helper()
	data := runData(jobID, eventType)
	data["runId"] = runID
	code, out := e.call(http.MethodPost, "/internal/v1/job-run-events", e.cfg.InternalAPIToken,
		map[string]any{"accountId": e.account.ID, "eventType": eventType, "data": data})
	if code != http.StatusAccepted {
		e.t.Fatalf("ingest: %d %v", code, out)
	}
	return out["data"].(map[string]any)["eventId"].(string)
}

// TestOrder_RunsKeepTheirOrderUnderFailures: 1,000 runs x (started, then
// completed, posted back to back); 20 % of first attempts (drawn from the
// delivery id) are answered 500. At the receiver no run's completed
// arrives before its started was answered 2xx, and every delivery
// succeeds.
func TestOrder_RunsKeepTheirOrderUnderFailures(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_BREAKER_THRESHOLD": "0"})
	type arrival struct {
		run       int64
		eventType string
		ok        bool
	}
	var mu sync.Mutex
	var arrivals []arrival
	failed := 0
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		var body struct {
			EventType string `json:"eventType"`
			Data      struct {
				RunID json.Number `json:"runId"`
			} `json:"data"`
		}
		_ = json.Unmarshal(mustBody(r), &body)
		run, _ := body.Data.RunID.Int64()
		id := r.Header.Get(webhooks.HeaderDeliveryID)
		sum := sha256.Sum256([]byte(id))
		fail := r.Header.Get(webhooks.HeaderAttempt) == "1" && sum[0] < 51 // 20 %
		mu.Lock()
		defer mu.Unlock()
		if fail {
			failed++
		}
		arrivals = append(arrivals, arrival{run: run, eventType: body.EventType, ok: !fail})
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, []int64{9}, true)
	rc.setSecret(secret)
	const runs = 1000
	var ids []string
	var wg sync.WaitGroup
	var idsMu sync.Mutex
	for g := range 16 {
		wg.Go(func() {
			for run := int64(g); run < runs; run += 16 {
				s := e.postRun(webhooks.EventRunStarted, 9, 1000+run)
				c := e.postRun(webhooks.EventRunCompleted, 9, 1000+run)
				idsMu.Lock()
				ids = append(ids, s, c)
				idsMu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if d := e.waitDelivery(id, sub.ID); d.Status != deliveries.StatusSucceeded {
			t.Fatalf("delivery of %s: %s", id, d.Status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	startedOK := map[int64]bool{}
	inversions := 0
	for _, a := range arrivals {
		switch {
		case a.eventType == webhooks.EventRunStarted && a.ok:
			startedOK[a.run] = true
		case a.eventType == webhooks.EventRunCompleted && !startedOK[a.run]:
			inversions++
		}
	}
	if inversions != 0 || len(startedOK) != runs {
		t.Errorf("%d completed events arrived before their run's started was answered (%d runs' started answered), want 0 of %d",
			inversions, len(startedOK), runs)
	}
	if share := float64(failed) / (2 * runs); share < 0.15 || share > 0.25 {
		t.Errorf("%.1f %% of first attempts failed, want about 20 %%", 100*share)
	}
	t.Logf("%d runs, %d first attempts answered 500: %d inversions", runs, failed, inversions)
}

func mustBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

// noticeSink is an account's notification endpoint: it checks each
// notice's signature and keeps the notices.
type noticeSink struct {
	*receiver
	secret string
}

func (n *noticeSink) notices(t *testing.T) []webhooks.NoticeBody {
	t.Helper()
	var out []webhooks.NoticeBody
	for _, r := range n.got() {
		mac := hmac.New(sha256.New, []byte(n.secret))
		mac.Write(r.Body)
		if hex.EncodeToString(mac.Sum(nil)) != r.Header.Get("Authorization") {
			t.Errorf("a notice's Authorization is not the HMAC of its body with the endpoint's secret")
		}
		var b webhooks.NoticeBody
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatalf("notice %s: %v", r.Body, err)
		}
		out = append(out, b)
	}
	return out
}

// setNotificationEndpoint gives the env's account a notification endpoint.
func (e *env) setNotificationEndpoint(url string) *noticeSink {
	e.t.Helper()
	keys, err := config.ParseSecretKeys(e.cfg.SecretKeys)
	if err != nil {
		e.t.Fatal(err)
	}
	box, err := secrets.NewBox(keys)
	if err != nil {
		e.t.Fatal(err)
	}
	secret := "whn_" + webhooks.NewID("")
	keyID, sealed := box.Seal(secret, webhooks.NotificationSecretAAD(e.account.ID))
	if _, _, err := e.notices.PutNotificationEndpoint(e.t.Context(), incidents.StoredEndpoint{AccountID: e.account.ID,
		URL: url, SecretKeyID: keyID, SecretCiphertext: sealed}, false); err != nil {
		e.t.Fatal(err)
	}
	return &noticeSink{secret: secret}
}

// TestNotices_OncePerIncidentWhileFlapping: a receiver flaps (down and up
// every 700 ms) for 8 s while events keep coming, so its breaker opens and
// closes again and again; then it stays up. The account's notification
// endpoint gets one webhook.breaker_opened notice (the incident lasted
// past the notice threshold) and, once the breaker stayed closed for the
// quiet period, one webhook.recovered: each signed, both of one incident.
// Its deliveries are held during the outages (DELIVERY_ON_OUTAGE=hold), so
// every one arrives: retried on their schedule, some would run out their
// 0.5 s of retries in a 700 ms outage.
func TestNotices_OncePerIncidentWhileFlapping(t *testing.T) {
	e := newEnv(t, true, breakerConfig(map[string]string{
		"DELIVERY_BREAKER_THRESHOLD": "3", "DELIVERY_BREAKER_PROBE_FIRST": "200ms", "DELIVERY_BREAKER_PROBE_MAX": "400ms",
		"INCIDENT_NOTICE_AFTER": "1s", "INCIDENT_QUIET": "3s", "DELIVERY_ON_OUTAGE": "hold",
	}))
	sinkRC := newReceiver(t, nil)
	sink := e.setNotificationEndpoint(sinkRC.URL + "/notices")
	sink.receiver = sinkRC
	start := time.Now()
	flapping := func() bool { return time.Since(start) < 8*time.Second }
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if flapping() && (time.Since(start)/(700*time.Millisecond))%2 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, []int64{11}, true)
	rc.setSecret(secret)
	var ids []string
	opens := 0
	wasOpen := false
	for flapping() {
		ids = append(ids, e.post(webhooks.EventRunCompleted, 11, ""))
		time.Sleep(50 * time.Millisecond)
		if st, err := e.store.Breaker(t.Context(), sub.ID); err == nil && st.Open != wasOpen {
			wasOpen = st.Open
			if st.Open {
				opens++
			}
		}
	}
	for _, id := range ids {
		if d := e.waitDelivery(id, sub.ID); d.Status != deliveries.StatusSucceeded {
			t.Errorf("delivery %s: %s", id, d.Status)
		}
	}
	waitFor(t, func() bool {
		st, err := e.store.Breaker(t.Context(), sub.ID)
		return err == nil && st.IncidentStartedAt == nil
	})
	waitFor(t, func() bool { return len(sinkRC.got()) >= 2 })
	time.Sleep(2 * time.Second) // a storm would show now
	got := sink.notices(t)
	kinds := map[string]int{}
	for _, n := range got {
		kinds[n.Type]++
		if n.Webhook.ID != sub.ID || n.AccountID != fmt.Sprint(e.account.ID) {
			t.Errorf("notice %+v is not about webhook %s of account %d", n, sub.ID, e.account.ID)
		}
		if n.IncidentStartedAt != got[0].IncidentStartedAt {
			t.Errorf("notices of %s and %s incidents, want one incident", n.IncidentStartedAt, got[0].IncidentStartedAt)
		}
	}
	if opens < 2 {
		t.Errorf("the breaker opened %d times while the receiver flapped, want it to flap too", opens)
	}
	if len(got) != 2 || kinds[webhooks.NoticeBreakerOpened] != 1 || kinds[webhooks.NoticeRecovered] != 1 {
		t.Errorf("notices %v, want one %s and one %s for the whole incident (the breaker opened %d times)",
			kinds, webhooks.NoticeBreakerOpened, webhooks.NoticeRecovered, opens)
	}
	if got[0].Type != webhooks.NoticeBreakerOpened {
		t.Errorf("first notice %s, want %s", got[0].Type, webhooks.NoticeBreakerOpened)
	}
	stored, err := e.notices.Notices(t.Context(), e.account.ID, 10)
	if err != nil || len(stored) != 2 || stored[0].Status != "delivered" || stored[1].Status != "delivered" {
		t.Errorf("stored notices %+v (err %v), want both delivered", stored, err)
	}
	t.Logf("the breaker opened %d times in 8 s of flapping: %d notices", opens, len(got))
}
