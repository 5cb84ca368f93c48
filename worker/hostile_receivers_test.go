package worker_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// hostileTimeout is DELIVERY_TIMEOUT in these tests: short, so a case
// that spends its six attempts on timeouts ends in about 13 s.
const hostileTimeout = 2 * time.Second

// isolationBound is how soon after its ingestion account B's delivery
// must reach B's receiver while A's receiver misbehaves on the same shard:
// a correctness bound (a healthy delivery does not wait for a hostile
// one), generous for a loaded 2-core machine.
const isolationBound = time.Second

// hostileCase is a receiver's hostile behaviour and the record it must
// leave: the outcome the service can truthfully say, given what came back.
type hostileCase struct {
	name   string
	scheme string // http unless said
	hang   bool   // the receiver accepts and never speaks (a TLS hang)
	answer func(c *hostileConn)

	wantStatus string // final status of the delivery
	// wantCode is each attempt's status code (0: none), wantKinds the
	// error kinds an attempt may record ("" for a 2xx).
	wantCode  int
	wantKinds []string
	// snippetHas, when not empty, must be in every attempt's snippet:
	// what the receiver said, cleaned, not blanked.
	snippetHas []string
}

func hostileCases(t *testing.T) []hostileCase {
	failed := deliveries.StatusFailed
	timeout := []string{deliveries.KindTimeout}
	httpStatus := []string{deliveries.KindHTTPStatus}
	return []hostileCase{
		{name: "NULInBody", answer: rawAnswer("HTTP/1.1 200 OK", []string{"Content-Type: text/plain"}, []byte("ok\x00\x00done")),
			wantStatus: deliveries.StatusSucceeded, wantCode: 200, wantKinds: []string{""}, snippetHas: []string{"ok", "done"}},
		{name: "InvalidUTF8InBody", answer: rawAnswer("HTTP/1.1 500 Internal Server Error", nil, []byte("\xff\xfe broken \xc3\x28 utf8 \xed\xa0\x80 \x1b[31m")),
			wantStatus: failed, wantCode: 500, wantKinds: httpStatus, snippetHas: []string{"broken", "utf8"}},
		{name: "NULInStatusLine", answer: rawAnswer("HTTP/1.1 500 Bad\x00Thing\xff", nil, nil),
			wantStatus: failed, wantCode: 500, wantKinds: httpStatus},
		// NUL is not a header byte (RFC 9110 5.5): the answer is not HTTP,
		// and is recorded as a failed exchange, not as a 503.
		{name: "NULInRetryAfter", answer: rawAnswer("HTTP/1.1 503 Service Unavailable", []string{"Retry-After: 1\x00"}, nil),
			wantStatus: failed, wantKinds: []string{deliveries.KindConnection}},
		// Bytes >= 0x80 are obs-text, allowed in a header: an unreadable
		// Retry-After asks for nothing (an hour's wait would end the test).
		{name: "InvalidBytesInRetryAfter", answer: rawAnswer("HTTP/1.1 429 Too Many Requests", []string{"Retry-After: \xff\xfe3600"}, nil),
			wantStatus: failed, wantCode: 429, wantKinds: httpStatus},
		{name: "NULInWebhookDelivery", answer: rawAnswer("HTTP/1.1 410 Gone", []string{"Webhook-Delivery: disable\x00"}, nil),
			wantStatus: failed, wantKinds: []string{deliveries.KindConnection}},
		// An unreadable directive is none: the 500 is retried, the webhook
		// stays active.
		{name: "InvalidBytesInWebhookDelivery", answer: rawAnswer("HTTP/1.1 500 Internal Server Error", []string{"Webhook-Delivery: \xffdisable"}, nil),
			wantStatus: failed, wantCode: 500, wantKinds: httpStatus},
		{name: "HundredMegabyteBody", answer: hugeBody(100 << 20),
			wantStatus: deliveries.StatusSucceeded, wantCode: 200, wantKinds: []string{""}, snippetHas: []string{"huge"}},
		// The status came, the body never ends: no complete answer.
		{name: "BodyThatNeverEnds", answer: func(c *hostileConn) {
			if c.write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")) {
				c.trickle([]byte("1\r\nx\r\n"), 50*time.Millisecond)
			}
		}, wantStatus: failed, wantKinds: timeout},
		{name: "HeadersThatTrickle", answer: func(c *hostileConn) {
			if c.write([]byte("HTTP/1.1 200 OK\r\n")) {
				c.trickle([]byte("X-Trickle: a\r\n"), 50*time.Millisecond)
			}
		}, wantStatus: failed, wantKinds: timeout},
		// Redirects are not followed: each attempt is one request.
		{name: "RedirectLoop", answer: func(c *hostileConn) {
			loc := "http://" + c.Request.Host + c.Request.URL.Path
			rawAnswer("HTTP/1.1 307 Temporary Redirect", []string{"Location: " + loc}, nil)(c)
		}, wantStatus: failed, wantCode: 307, wantKinds: httpStatus},
		// 64 members of 16 MiB: 1 GiB of NUL once decompressed.
		{name: "GzipBomb", answer: rawAnswer("HTTP/1.1 502 Bad Gateway", []string{"Content-Encoding: gzip", "Content-Type: text/plain"}, gzipBomb(t, 64)),
			wantStatus: failed, wantCode: 502, wantKinds: httpStatus},
		// Informational answers without end: never a final answer, so a
		// timeout, or a connection error once their headers pass the
		// client's bound.
		{name: "InformationalStorm", answer: func(c *hostileConn) {
			storm := bytes.Repeat([]byte("HTTP/1.1 102 Processing\r\nX-Storm: \xff\r\n\r\n"), 256)
			c.trickle(storm, time.Millisecond)
		}, wantStatus: failed, wantKinds: []string{deliveries.KindTimeout, deliveries.KindConnection}},
		{name: "TLSHandshakeThatHangs", scheme: "https", hang: true,
			wantStatus: failed, wantKinds: timeout},
	}
}

// TestHostileReceivers_RecordedTruthfullyAndOthersUnaffected: account A's
// receiver answers with something hostile, account B's webhook shares
// A's shard (there is one). A's delivery is recorded with what can
// truthfully be said (clean, bounded texts; no attempt past the timeout;
// every attempt one request), and B's deliveries, ingested right after
// A's and while A's hostile answer is under way, reach B within
// isolationBound of their ingestion, as if A were not there.
func TestHostileReceivers_RecordedTruthfullyAndOthersUnaffected(t *testing.T) {
	for _, tc := range hostileCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, true, map[string]string{"DELIVERY_SHARDS": "1", "DELIVERY_TIMEOUT": hostileTimeout.String()})
			scheme := tc.scheme
			if scheme == "" {
				scheme = "http"
			}
			hostile := newHostileServer(t, scheme, tc.hang, tc.answer)
			subA, _ := e.subscribe(hostile.URL, allTypes, nil, true)

			b := e.newAccount()
			healthy := newReceiver(t, nil)
			subB, secretB := e.subscribeFor(b.ID, healthy.URL)
			healthy.setSecret(secretB)
			if e.shardOf(subA.ID) != e.shardOf(subB.ID) {
				t.Fatalf("A's and B's webhooks are on shards %s and %s, want one", e.shardOf(subA.ID), e.shardOf(subB.ID))
			}

			eventA := e.postFor(e.account.ID, webhooks.EventRunCompleted, 42, "")
			rightAfter := e.sendToB(b.ID, healthy, "right after A's ingestion")
			waitFor(t, func() bool { return hostile.got() >= 1 })
			during := e.sendToB(b.ID, healthy, "while A's receiver answers")

			d := e.waitDeliveryOf(e.account.ID, eventA, subA.ID)
			checkHostileRecord(t, tc, d, hostile.got())
			e.checkHostileRecordOverAPI(subA.ID, d.ID)
			if after, err := e.subs.Get(context.Background(), e.account.ID, subA.ID); err != nil || !after.Active {
				t.Errorf("A's webhook active=%v (err %v) after its receiver's answers, want still active", after.Active, err)
			}

			for _, ev := range []string{rightAfter, during} {
				if got := e.waitDeliveryOf(b.ID, ev, subB.ID); got.Status != deliveries.StatusSucceeded || got.AttemptCount != 1 {
					t.Errorf("B's delivery of %s: %s after %d attempts, want succeeded at once", ev, got.Status, got.AttemptCount)
				}
			}
			if n := len(healthy.got()); n != 2 {
				t.Errorf("B's receiver got %d requests, want its 2 deliveries once each", n)
			}
		})
	}
}

// sendToB ingests an event of account b and waits until its receiver
// has it, failing when that took longer than isolationBound.
func (e *env) sendToB(b int64, rc *receiver, when string) string {
	e.t.Helper()
	before := len(rc.got())
	start := time.Now()
	ev := e.postFor(b, webhooks.EventRunCompleted, 7, "")
	var arrived time.Time
	waitFor(e.t, func() bool {
		for _, r := range rc.got()[before:] {
			if bytes.Contains(r.Body, []byte(ev)) {
				arrived = r.ArrivedAt
				return true
			}
		}
		return false
	})
	latency := arrived.Sub(start)
	e.t.Logf("B's delivery ingested %s reached B %s after its ingestion began", when, latency.Round(time.Millisecond))
	if latency > isolationBound {
		e.t.Errorf("B's delivery ingested %s reached B after %s, want within %s", when, latency.Round(time.Millisecond), isolationBound)
	}
	return ev
}

// checkHostileRecord checks A's final record against the case: its
// status, each attempt's outcome, texts fit to show, no attempt held past
// its timeout, and as many requests at the receiver as attempts recorded.
func checkHostileRecord(t *testing.T, tc hostileCase, d deliveries.Delivery, arrivals int) {
	t.Helper()
	wantAttempts := deliveries.MaxAttempts
	if tc.wantStatus == deliveries.StatusSucceeded {
		wantAttempts = 1
	}
	if d.Status != tc.wantStatus || d.AttemptCount != wantAttempts || len(d.Attempts) != wantAttempts {
		t.Errorf("A's delivery %s after %d attempts (%d recorded), want %s after %d", d.Status, d.AttemptCount, len(d.Attempts), tc.wantStatus, wantAttempts)
	}
	if arrivals != d.AttemptCount {
		t.Errorf("A's receiver got %d requests for %d recorded attempts, want one each", arrivals, d.AttemptCount)
	}
	if d.LastStatusCode != tc.wantCode {
		t.Errorf("A's last status code %d, want %d", d.LastStatusCode, tc.wantCode)
	}
	checkStoredText(t, "A's last error", d.LastError, deliveries.StoredMessageMax)
	for _, a := range d.Attempts {
		t.Logf("attempt %d at %s: %d %q in %s: %q; snippet %q", a.Number, a.StartedAt.Format("15:04:05.000"), a.StatusCode, a.ErrorKind, a.Duration, a.ErrorMessage, a.ResponseSnippet)
		if a.StatusCode != tc.wantCode || !slices.Contains(tc.wantKinds, a.ErrorKind) {
			t.Errorf("attempt %d recorded %d %q, want %d and one of %q", a.Number, a.StatusCode, a.ErrorKind, tc.wantCode, tc.wantKinds)
		}
		if a.Duration > hostileTimeout+500*time.Millisecond {
			t.Errorf("attempt %d took %s, want its receiver cut off at the %s timeout", a.Number, a.Duration, hostileTimeout)
		}
		checkStoredText(t, "snippet", a.ResponseSnippet, deliveries.StoredSnippetMax)
		checkStoredText(t, "error message", a.ErrorMessage, deliveries.StoredMessageMax)
		for _, s := range tc.snippetHas {
			if !strings.Contains(a.ResponseSnippet, s) {
				t.Errorf("attempt %d's snippet %q lacks %q: what the receiver said, cleaned, should stay", a.Number, a.ResponseSnippet, s)
			}
		}
	}
}

// checkStoredText fails unless s is valid UTF-8 without NUL or other
// control characters (tab, newline, carriage return aside), within max.
func checkStoredText(t *testing.T, what, s string, max int) {
	t.Helper()
	bad := strings.ContainsFunc(s, func(r rune) bool {
		return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f || (r >= 0x80 && r < 0xa0)
	})
	if !utf8.ValidString(s) || bad || len(s) > max {
		t.Errorf("%s %q: valid UTF-8 %t, control characters %t, %d bytes (at most %d)", what, s, utf8.ValidString(s), bad, len(s), max)
	}
}

// checkHostileRecordOverAPI reads the delivery as Recent Deliveries shows
// it: the API answers it, and as JSON.
func (e *env) checkHostileRecordOverAPI(subID, deliveryID string) {
	e.t.Helper()
	code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+subID+"/deliveries/"+deliveryID), e.token, nil)
	if code != http.StatusOK {
		e.t.Errorf("GET the delivery: %d %v", code, out)
	}
	code, out = e.call(http.MethodGet, accountPath(e, "/subscription/"+subID+"/deliveries"), e.token, nil)
	if code != http.StatusOK {
		e.t.Errorf("list the deliveries: %d %v", code, out)
	}
}
