package main

// The listen tests run the real program in-process: two `serve` (API
// replicas A and B; workers reach the relay at B), one `worker`, a Temporal
// dev server and PostgreSQL, and `listen` itself through run().

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// listenStack is the service as two API replicas and a worker.
type listenStack struct {
	db       *testenv.Database
	apiA     string // base URL of replica A
	apiB     string // base URL of replica B, RELAY_BASE_URL
	internal string
}

// startListenStack starts the stack; everything stops when tb ends.
func startListenStack(tb testing.TB) *listenStack {
	tb.Helper()
	temporal := testenv.StartTemporalServer(tb, testenv.FreeAddress(tb), "")
	db := testenv.NewDatabase(tb)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s := &listenStack{db: db, internal: "whi_" + base64.RawURLEncoding.EncodeToString(key)}
	addrA, addrB := testenv.FreeAddress(tb), testenv.FreeAddress(tb)
	s.apiA, s.apiB = "http://"+addrA, "http://"+addrB
	common := map[string]string{
		"DATABASE_URL":           db.URL,
		"TEMPORAL_ADDRESS":       temporal.Address,
		"TEMPORAL_TASK_QUEUE":    testenv.NewTaskQueue(tb),
		"SECRET_ENCRYPTION_KEYS": "t1:" + base64.StdEncoding.EncodeToString(key),
		"INTERNAL_API_TOKEN":     s.internal,
		// The destination policy stays strict: the relay alone is allowed.
		"RELAY_BASE_URL":                     s.apiB,
		"DELIVERY_TIMEOUT":                   "5s",
		"DELIVERY_RETRY_INITIAL_INTERVAL":    "2s",
		"DELIVERY_RETRY_BACKOFF_COEFFICIENT": "1",
		"DELIVERY_RETRY_MAX_INTERVAL":        "2s",
		"LOG_LEVEL":                          "info",
		"SHUTDOWN_GRACE_PERIOD":              "5s",
	}
	with := func(extra map[string]string) func(string) string {
		vars := map[string]string{}
		for k, v := range common {
			vars[k] = v
		}
		for k, v := range extra {
			vars[k] = v
		}
		return func(k string) string { return vars[k] }
	}
	startProcess(tb, "worker", with(map[string]string{"ADMIN_ADDR": testenv.FreeAddress(tb)}), `"msg":"worker polling"`)
	startProcess(tb, "serve", with(map[string]string{"HTTP_ADDR": addrA, "ADMIN_ADDR": testenv.FreeAddress(tb)}), `"msg":"API listening"`)
	startProcess(tb, "serve", with(map[string]string{"HTTP_ADDR": addrB, "ADMIN_ADDR": testenv.FreeAddress(tb)}), `"msg":"API listening"`)
	return s
}

// startProcess runs the program with args until tb ends, and returns once
// its stderr shows ready.
func startProcess(tb testing.TB, command string, getenv func(string) string, ready string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr testenv.LogBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{command}, getenv, io.Discard, &stderr) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("%s: %v", command, err)
			}
		case <-time.After(30 * time.Second):
			tb.Errorf("%s did not stop within 30s", command)
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(stderr.String(), ready) {
		select {
		case err := <-done:
			done <- err
			tb.Fatalf("%s exited before it was ready: %v\n%s", command, err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s not ready within 2m:\n%s", command, stderr.String())
		}
	}
}

// newAccount creates a Team account of its own (events of one test never
// reach another's webhooks) and an admin's API token.
func (s *listenStack) newAccount(tb testing.TB) (int64, string) {
	tb.Helper()
	ctx := context.Background()
	store := identity.NewStore(s.db.Pool)
	acct, err := store.CreateAccount(ctx, webhooks.NewID("Listen "), webhooks.PlanTeam)
	if err != nil {
		tb.Fatal(err)
	}
	_, token, err := store.CreateUser(ctx, identity.NewUser{
		AccountID: acct.ID, Email: webhooks.NewID("listen") + "@example.com", License: "developer", PermissionSets: []string{"account_admin"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return acct.ID, token
}

// listenRun is one `webhooks listen` running in-process.
type listenRun struct {
	stdout     *testenv.LogBuffer
	listenerID string
	webhookID  string
	secret     string
}

var listeningLine = regexp.MustCompile(`listener (wls_\S+), webhook (wsu_\S+)\)`)
var secretLine = regexp.MustCompile(`Signing secret: (\S+) \(`)

// startListen runs listen against api until tb ends, and returns once it
// polls.
func (s *listenStack) startListen(tb testing.TB, api, token string, account int64, name, forwardTo string) *listenRun {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &listenRun{stdout: &testenv.LogBuffer{}}
	var stderr testenv.LogBuffer
	done := make(chan error, 1)
	args := []string{"listen", "--api", api, "--token", token, "--account", fmt.Sprint(account), "--name", name, "--forward-to", forwardTo}
	go func() { done <- run(ctx, args, func(string) string { return "" }, l.stdout, &stderr) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("listen: %v\nstderr: %s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			tb.Error("listen did not stop within 20s of Ctrl-C")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !secretLine.MatchString(l.stdout.String()) {
		select {
		case err := <-done:
			done <- err
			tb.Fatalf("listen exited: %v\nstdout: %s\nstderr: %s", err, l.stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("listen did not start within 30s: %s %s", l.stdout.String(), stderr.String())
		}
	}
	m := listeningLine.FindStringSubmatch(l.stdout.String())
	if m == nil {
		tb.Fatalf("listen did not print its listener and webhook: %s", l.stdout.String())
	}
	l.listenerID, l.webhookID = m[1], m[2]
	l.secret = secretLine.FindStringSubmatch(l.stdout.String())[1]
	s.waitPolling(tb, l.listenerID)
	return l
}

// waitPolling waits until a long poll of the listener is under way.
func (s *listenStack) waitPolling(tb testing.TB, listenerID string) {
	tb.Helper()
	for range 500 {
		var polling bool
		err := s.db.Pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM webhook_listener_polls WHERE listener_id = $1 AND ended_at IS NULL AND polling_until > now())", listenerID).Scan(&polling)
		if err == nil && polling {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("listener %s never polled", listenerID)
}

// emit sends one job.run.completed event of job to the account through
// replica A and returns when it was accepted.
func (s *listenStack) emit(tb testing.TB, account, job int64) time.Time {
	tb.Helper()
	var stdout, stderr testenv.LogBuffer
	getenv := func(k string) string { return map[string]string{"INTERNAL_API_TOKEN": s.internal}[k] }
	sent := time.Now()
	args := []string{"emit", "--api", s.apiA, "--account", fmt.Sprint(account), "--type", webhooks.EventRunCompleted, "--job", fmt.Sprint(job)}
	if err := run(context.Background(), args, getenv, &stdout, &stderr); err != nil {
		tb.Fatalf("emit: %v (%s)", err, stderr.String())
	}
	return sent
}

// call makes an API request with token and decodes the envelope's data.
func (s *listenStack) call(tb testing.TB, method, url, token string, body, out any) int {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Token "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		tb.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(env.Data, out); err != nil {
			tb.Fatalf("%s %s: %v in %s", method, url, err, raw)
		}
	}
	return resp.StatusCode
}

// deliveryRecord is a delivery as GET .../deliveries/{id} shows it.
type deliveryRecord struct {
	Status       string `json:"status"`
	AttemptCount int    `json:"attempt_count"`
	Payload      string `json:"payload"`
	Attempts     []struct {
		StatusCode      string `json:"status_code"`
		ErrorKind       string `json:"error_kind"`
		ResponseSnippet string `json:"response_snippet"`
	} `json:"attempts"`
}

// waitDelivery polls the delivery's record until done says it is what the
// test waits for (at most 30 s) and returns it.
func (s *listenStack) waitDelivery(tb testing.TB, account int64, token, webhookID, deliveryID string, done func(deliveryRecord) bool) deliveryRecord {
	tb.Helper()
	url := fmt.Sprintf("%s/api/v3/accounts/%d/webhooks/subscription/%s/deliveries/%s", s.apiA, account, webhookID, deliveryID)
	var d deliveryRecord
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		d = deliveryRecord{}
		if s.call(tb, http.MethodGet, url, token, nil, &d) == http.StatusOK && done(d) {
			return d
		}
	}
	tb.Fatalf("delivery %s not as awaited within 30s: %+v", deliveryID, d)
	return d
}

// received is one request the local receiver got.
type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

// localReceiver is the developer's local endpoint: it records each request
// and answers with the status answer picks (by arrival, from 1).
type localReceiver struct {
	url string
	got chan received
}

func startLocalReceiver(tb testing.TB, answer func(n int) int) *localReceiver {
	tb.Helper()
	r := &localReceiver{got: make(chan received, 64)}
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		n++
		code := answer(n)
		mu.Unlock()
		r.got <- received{header: req.Header.Clone(), body: body, at: time.Now()}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(code)
		fmt.Fprintf(w, "local answer %d", code)
	}))
	tb.Cleanup(srv.Close)
	r.url = srv.URL + "/webhooks"
	return r
}

// next returns the next request the receiver got, within 30 s.
func (r *localReceiver) next(tb testing.TB) received {
	tb.Helper()
	select {
	case got := <-r.got:
		return got
	case <-time.After(30 * time.Second):
		tb.Fatal("the local receiver got nothing within 30s")
		return received{}
	}
}
