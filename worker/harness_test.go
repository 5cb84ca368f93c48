package worker_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/feed"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/internal/enginetest"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/signingkeys"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/worker"
	"github.com/jobhooks/jobhooks/workflows"
)

var temporalAddr string

func TestMain(m *testing.M) {
	if os.Getenv(workerProcessEnv) == "1" {
		os.Exit(runWorkerProcess())
	}
	addr, stop := testenv.StartTemporal(m)
	temporalAddr = addr
	code := m.Run()
	stop()
	os.Exit(code)
}

// env is one test's whole service: database, worker on its own task queue,
// API, and an account with a token.
type env struct {
	t        *testing.T
	cfg      config.Config
	db       *testenv.Database
	temporal client.Client
	api      *httptest.Server
	subs     *subscriptions.Store
	store    *deliveries.Store
	notices  *incidents.Store // notices and notification endpoints
	dispatch *dispatch.Service
	mu       sync.Mutex
	groups   []int // events per group commit, in order
	account  webhooks.Account
	token    string
}

func testConfig(t *testing.T, dbURL, temporalAddress string, extra map[string]string) config.Config {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	vars := map[string]string{
		"DATABASE_URL":                       dbURL,
		"TEMPORAL_ADDRESS":                   temporalAddress,
		"TEMPORAL_TASK_QUEUE":                testenv.NewTaskQueue(t),
		"SECRET_ENCRYPTION_KEYS":             "k1:" + base64.StdEncoding.EncodeToString(key),
		"INTERNAL_API_TOKEN":                 "whi_test_internal_token_0123456789abcdef",
		"DESTINATION_ALLOW_CIDRS":            "127.0.0.0/8",
		"DELIVERY_RETRY_INITIAL_INTERVAL":    "100ms",
		"DELIVERY_RETRY_BACKOFF_COEFFICIENT": "1",
		"DELIVERY_RETRY_MAX_INTERVAL":        "100ms",
		"SHUTDOWN_GRACE_PERIOD":              "2s",
	}
	for k, v := range extra {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func dialTemporal(t *testing.T, cfg config.Config) client.Client {
	t.Helper()
	tc, err := client.Dial(client.Options{HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace, Logger: sdklog.NewStructuredLogger(discardLogger())})
	if err != nil {
		t.Fatalf("dial temporal: %v", err)
	}
	t.Cleanup(tc.Close)
	return tc
}

// newEnv starts everything; startWorker false leaves the worker to the test.
func newEnv(t *testing.T, startWorker bool, extra map[string]string) *env {
	t.Helper()
	db := testenv.NewDatabase(t)
	e := newEnvWith(t, db, testConfig(t, db.URL, temporalAddr, extra))
	if startWorker {
		e.startWorker(e.cfg)
	}
	return e
}

// newEnvWith builds the env on a given database and configuration, without
// a worker.
func newEnvWith(t *testing.T, db *testenv.Database, cfg config.Config) *env {
	t.Helper()
	e := &env{t: t, cfg: cfg, db: db, temporal: dialTemporal(t, cfg)}
	keys, _ := config.ParseSecretKeys(cfg.SecretKeys)
	box, err := secrets.NewBox(keys)
	if err != nil {
		t.Fatal(err)
	}
	e.subs = subscriptions.NewStore(db.Pool, box)
	e.store = deliveries.NewStore(db.Pool)
	e.notices = incidents.NewStore(db.Pool)
	ids := identity.NewStore(db.Pool)
	ctx := context.Background()
	e.account, err = ids.CreateAccount(ctx, "Delivery test "+t.Name(), webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	_, e.token, err = ids.CreateUser(ctx, identity.NewUser{AccountID: e.account.ID, Email: webhooks.NewID("u") + "@example.com", License: "developer", PermissionSets: []string{"account_admin"}})
	if err != nil {
		t.Fatal(err)
	}
	svcCtx, stopService := context.WithCancel(context.Background())
	t.Cleanup(stopService)
	opts := worker.DispatchOptions(cfg)
	opts.ObserveGroupCommit = func(events int, _ time.Duration) {
		e.mu.Lock()
		e.groups = append(e.groups, events)
		e.mu.Unlock()
	}
	e.dispatch = dispatch.NewService(svcCtx, e.temporal, e.store, discardLogger(), opts)
	allow, _ := cfg.AllowedCIDRs()
	subs, err := subscriptions.NewService(e.subs, &netguard.Policy{Allow: allow}, subscriptions.WakeMoved(e.dispatch))
	if err != nil {
		t.Fatal(err)
	}
	signing, err := signingkeys.NewService(signingkeys.NewStore(db.Pool, box), signingkeys.Options{Overlap: cfg.SigningKeyRotationOverlap})
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.NewServer(api.Deps{
		Config: cfg, Logger: discardLogger(), Identity: ids, Subscriptions: subs,
		Deliveries: e.dispatch, DeliveryReads: deliveryreads.NewService(e.store), SigningKeys: signing, Feed: feed.NewService(e.store, box),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.api = httptest.NewServer(h)
	t.Cleanup(e.api.Close)
	return e
}

// startWorker runs worker.Run in-process until the test ends.
func (e *env) startWorker(cfg config.Config) {
	e.t.Helper()
	enginetest.StartWorker(e.t, worker.Deps{Config: cfg, Logger: discardLogger(), Pool: e.db.Pool, Temporal: e.temporal})
}

// runActivity runs one of the worker's activities, built from the env's
// configuration, outside any workflow (Temporal's activity test
// environment) and returns its encoded result.
func (e *env) runActivity(pick func(*activities.Set) any, args ...any) (converter.EncodedValue, error) {
	e.t.Helper()
	acts, err := worker.NewActivities(worker.Deps{Config: e.cfg, Logger: discardLogger(), Pool: e.db.Pool, Temporal: e.temporal})
	if err != nil {
		e.t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	aenv := suite.NewTestActivityEnvironment()
	fn := pick(acts)
	aenv.RegisterActivity(fn)
	return aenv.ExecuteActivity(fn, args...)
}

// newAccount creates another account (its data is invisible to e's).
func (e *env) newAccount() webhooks.Account {
	e.t.Helper()
	a, err := identity.NewStore(e.db.Pool).CreateAccount(context.Background(), "Other "+webhooks.NewID("")[:6], webhooks.PlanTeam)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// subscribeFor creates a subscription of accountID for every event type.
func (e *env) subscribeFor(accountID int64, url string) (webhooks.Subscription, string) {
	e.t.Helper()
	sub, secret, err := e.subs.Create(context.Background(), webhooks.Subscription{
		AccountID: accountID, Name: "hook " + webhooks.NewID("")[:6], ClientURL: url,
		EventTypes: allTypes, Active: true,
	})
	if err != nil {
		e.t.Fatalf("create subscription: %v", err)
	}
	return sub, secret
}

// groupSizes returns the events of each group commit so far.
func (e *env) groupSizes() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.groups...)
}

// subscribe creates a subscription and returns it with its secret.
func (e *env) subscribe(url string, eventTypes []string, jobIDs []int64, active bool) (webhooks.Subscription, string) {
	e.t.Helper()
	sub, secret, err := e.subs.Create(context.Background(), webhooks.Subscription{
		AccountID: e.account.ID, Name: "hook " + webhooks.NewID("")[:6], ClientURL: url,
		EventTypes: eventTypes, JobIDs: jobIDs, Active: active,
	})
	if err != nil {
		e.t.Fatalf("create subscription: %v", err)
	}
	return sub, secret
}

// call makes an API request and decodes the envelope.
func (e *env) call(method, path, token string, body any) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.api.URL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		e.t.Fatalf("%s %s: %d, not JSON: %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

func runData(jobID int64, eventType string) map[string]any {
	d := map[string]any{
		"jobId": jobID, "jobName": "Nightly build", "runId": 9001, "environmentId": 12,
		"environmentName": "Production", "dbtVersion": "1.9.2", "projectName": "Analytics",
		"projectId": "345", "runStatusMessage": "ok", "runReason": "Kicked off by schedule",
		"runStartedAt": "2026-01-02T03:04:05.678Z",
	}
	switch eventType {
	case webhooks.EventRunCompleted:
		d["runFinishedAt"] = "2026-01-02T03:14:05Z"
	case webhooks.EventRunErrored:
		d["runErroredAt"] = "2026-01-02T03:10:05+00:00"
	}
	return d
}

// ingest posts an event and waits until its delivery to each of subs is
// final.
func (e *env) ingest(eventType string, jobID int64, callerEventID string, subs ...string) string {
	e.t.Helper()
	id := e.post(eventType, jobID, callerEventID)
	for _, sub := range subs {
		e.waitDelivery(id, sub)
	}
	return id
}

// post posts an event and returns its id once accepted, without waiting.
func (e *env) post(eventType string, jobID int64, callerEventID string) string {
	e.t.Helper()
	return e.postFor(e.account.ID, eventType, jobID, callerEventID)
}

// postFor posts an event of accountID.
func (e *env) postFor(accountID int64, eventType string, jobID int64, callerEventID string) string {
	e.t.Helper()
	body := map[string]any{"accountId": accountID, "eventType": eventType, "data": runData(jobID, eventType)}
	if callerEventID != "" {
		body["eventId"] = callerEventID
	}
	code, out := e.call(http.MethodPost, "/internal/v1/job-run-events", e.cfg.InternalAPIToken, body)
	if code != http.StatusAccepted {
		e.t.Fatalf("ingest: %d %v", code, out)
	}
	return out["data"].(map[string]any)["eventId"].(string)
}

// waitDelivery waits until the delivery of event x subscription is final
// and returns its record.
func (e *env) waitDelivery(eventID, subID string) deliveries.Delivery {
	e.t.Helper()
	return e.waitDeliveryOf(e.account.ID, eventID, subID)
}

// waitDeliveryOf waits for a delivery of accountID's webhook.
func (e *env) waitDeliveryOf(accountID int64, eventID, subID string) deliveries.Delivery {
	e.t.Helper()
	id := e.deliveryID(eventID, subID)
	var d deliveries.Delivery
	waitFor(e.t, func() bool {
		var err error
		d, err = e.store.Delivery(context.Background(), accountID, subID, id)
		return err == nil && deliveries.IsFinal(d.Status)
	})
	return d
}

// deliveryID is the id of the delivery of event x subscription. An id
// carries the second it was made, so it is read, not derived: ingestion
// stores an event's deliveries before it answers, so it is there to read.
func (e *env) deliveryID(eventID, subID string) string {
	e.t.Helper()
	return testenv.DeliveryID(e.t, e.db.Pool, eventID, subID)
}

// madeDelivery is deliveryID for an event that may not have matched the
// webhook: false when ingestion made no delivery of it to subID.
func (e *env) madeDelivery(eventID, subID string) (string, bool) {
	e.t.Helper()
	var made bool
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM webhook_deliveries
		WHERE event_id = $1 AND subscription_id = $2)`, eventID, subID).Scan(&made); err != nil {
		e.t.Fatal(err)
	}
	if !made {
		return "", false
	}
	return e.deliveryID(eventID, subID), true
}

// record returns the delivery record of event x subscription.
func (e *env) record(eventID, subID string) deliveries.Delivery {
	e.t.Helper()
	id := e.deliveryID(eventID, subID)
	d, err := e.store.Delivery(context.Background(), e.account.ID, subID, id)
	if err != nil {
		e.t.Fatalf("delivery record %s: %v", id, err)
	}
	return d
}

// receiver is a loopback endpoint that verifies signatures exactly as a
// spec receiver does (hex HMAC-SHA256 of the raw body vs Authorization).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	secret   string
	requests []received
	respond  func(n int, w http.ResponseWriter, r *http.Request) // n counts from 1
}

type received struct {
	Body      []byte
	Header    http.Header
	Signed    bool
	Path      string
	ArrivedAt time.Time
}

func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Server.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	mac := hmac.New(sha256.New, []byte(rc.secret))
	mac.Write(body)
	signed := hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(r.Header.Get("Authorization")))
	rc.requests = append(rc.requests, received{Body: body, Header: r.Header.Clone(), Signed: signed, Path: r.URL.Path, ArrivedAt: time.Now()})
	n := len(rc.requests)
	respond := rc.respond
	rc.mu.Unlock()
	if respond == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body)) // respond may read it too
	respond(n, w, r)
}

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	rc.secret = s
	rc.mu.Unlock()
}

func (rc *receiver) got() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.requests...)
}

func status(code int) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

func mustJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, b)
	}
	return m
}

func accountPath(e *env, rest string) string {
	return fmt.Sprintf("/api/v3/accounts/%d/webhooks%s", e.account.ID, rest)
}

// waitFor polls cond every 50ms for at most 60s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }

// laneKey is a webhook's lane key as stored (it follows its destination).
func (e *env) laneKey(subscriptionID string) int {
	e.t.Helper()
	r, err := e.store.Route(context.Background(), subscriptionID)
	if err != nil {
		e.t.Fatalf("route of %s: %v", subscriptionID, err)
	}
	return r.LaneKey
}

// shardOf is the id of the shard workflow that owns a webhook.
func (e *env) shardOf(subscriptionID string) string {
	e.t.Helper()
	n := deliveries.ShardOf(e.laneKey(subscriptionID), e.cfg.DeliveryShards)
	return workflows.ShardWorkflowID(e.cfg.TemporalTaskQueue, n, e.cfg.DeliveryShards)
}

// update sends an operator's Update to a workflow through the SDK, as
// `temporal workflow update execute` does, and waits for its result.
func (e *env) update(workflowID, name string, arg any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := e.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflowID, UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return nil, err
	}
	var res map[string]any
	err = h.Get(ctx, &res)
	return res, err
}
