package activities

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/netguard"
)

// hostileTimeout is the attempt timeout here: short, so the cases that
// must time out do so quickly.
const hostileTimeout = time.Second

// hostileMargin is how long past the attempt timeout an attempt may take
// to end, on a loaded 2-core machine.
const hostileMargin = 500 * time.Millisecond

// hostileAllocMax bounds what one attempt may allocate, receiver included:
// far below the 100 MB body, the 64 MB gzip bomb and the 10 MB of 1xx
// answers the transport would otherwise read.
const hostileAllocMax = 8 << 20

// hostileCase is a receiver's hostile behaviour and the outcome an
// attempt must truthfully report.
type hostileCase struct {
	name     string
	receiver func(t *testing.T) string // starts the receiver; its URL
	wantKind string
	wantCode int
	// wantMessage and wantSnippet, when not empty, must be in the
	// message and the snippet: what was said, cleaned, not blanked.
	wantMessage, wantSnippet string
	wantRetryAfter           time.Duration
	wantDirective            string
}

func hostileCases() []hostileCase {
	conn, status, timeout := deliveries.KindConnection, deliveries.KindHTTPStatus, deliveries.KindTimeout
	return []hostileCase{
		{name: "NULInBody200", receiver: answering("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nok\x00\x00\x00\x00\x00done"),
			wantCode: 200, wantSnippet: "done"},
		{name: "InvalidUTF8AndNULInBody500", receiver: answering("HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\n" +
			"\xff\xfe broken \x00 \xc3\x28 utf8 \xed\xa0\x80 \x1b[31m red"),
			wantKind: status, wantCode: 500, wantSnippet: "utf8", wantMessage: "500 Internal Server Error"},
		{name: "InvalidUTF8AndNULInBody200", receiver: answering("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + strings.Repeat("\xff\x00é", 400)),
			wantCode: 200},

		// A header value may not hold NUL or control characters (RFC 9110
		// 5.5): such an answer is not HTTP, and no status was received.
		{name: "NULInRetryAfter", receiver: answering("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\x00\r\nContent-Length: 0\r\n\r\n"),
			wantKind: conn, wantMessage: "malformed MIME header"},
		{name: "ControlInRetryAfter", receiver: answering("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\x1b[2J\r\nContent-Length: 0\r\n\r\n"),
			wantKind: conn, wantMessage: "malformed MIME header"},
		// Bytes >= 0x80 are obs-text, allowed in a value: read, not understood.
		{name: "InvalidUTF8InRetryAfter", receiver: answering("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\xff\xfe\r\nContent-Length: 0\r\n\r\n"),
			wantKind: status, wantCode: 503},
		// Seconds whose nanoseconds overflow int64 are a long wait, not a
		// wrapped one (18446744074 s wrapped to 0.29 s).
		{name: "OverflowingRetryAfter", receiver: answering("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 18446744074\r\nContent-Length: 0\r\n\r\n"),
			wantKind: status, wantCode: 429, wantRetryAfter: retryAfterCeiling},
		{name: "NULInDirective", receiver: answering("HTTP/1.1 410 Gone\r\nWebhook-Delivery: abort\x00\r\nContent-Length: 0\r\n\r\n"),
			wantKind: conn, wantMessage: "malformed MIME header"},
		{name: "ControlInDirective", receiver: answering("HTTP/1.1 410 Gone\r\nWebhook-Delivery: \x7fdisable\r\nContent-Length: 0\r\n\r\n"),
			wantKind: conn, wantMessage: "malformed MIME header"},
		{name: "InvalidUTF8InDirective", receiver: answering("HTTP/1.1 410 Gone\r\nWebhook-Delivery: abort\xff\r\nContent-Length: 0\r\n\r\n"),
			wantKind: status, wantCode: 410},
		{name: "DirectiveAnyCase", receiver: answering("HTTP/1.1 410 Gone\r\nWebhook-Delivery:  ABORT \r\nContent-Length: 0\r\n\r\n"),
			wantKind: status, wantCode: 410, wantDirective: webhooks.DirectiveAbort},
		{name: "HugeHeader", receiver: answering("HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\nContent-Length: 0\r\n\r\n"),
			wantKind: conn, wantMessage: "exceeded"},

		{name: "Body100MB", receiver: hugeBody(100 << 20), wantCode: 200, wantSnippet: "aaaa"},
		{name: "BodyNeverEnds", receiver: trickling("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nok"), wantKind: timeout},
		{name: "HeadersTrickle", receiver: trickling("HTTP/1.1 200 OK\r\nX-Slow: "), wantKind: timeout},
		{name: "StatusLineTrickles", receiver: trickling("HTTP/1.1 2"), wantKind: timeout},
		{name: "RedirectLoop", receiver: redirectLoop, wantKind: status, wantCode: 302, wantMessage: "redirects are not followed"},
		// Go's transport asks for gzip itself and inflates the answer: the
		// read stops at its cap of the inflated bytes.
		{name: "GzipBomb", receiver: gzipBomb(200, 64<<20), wantCode: 200},
		{name: "GzipBombWith500", receiver: gzipBomb(500, 64<<20), wantKind: status, wantCode: 500},
		{name: "InformationalBeforeFinal", receiver: answering(strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n", 200) +
			"HTTP/1.1 204 No Content\r\n\r\n"), wantCode: 204},
		// 1xx answers count toward the header limit together with the
		// final one; without a final one, the limit ends the attempt.
		{name: "InformationalStorm", receiver: informationalStorm, wantKind: conn, wantMessage: "exceeded"},
		{name: "TLSHandshakeHangs", receiver: tlsHang, wantKind: timeout},
		{name: "NULInStatusCode", receiver: answering("HTTP/1.1 2\x000 OK\r\nContent-Length: 0\r\n\r\n"),
			wantKind: conn, wantMessage: "malformed HTTP status code"},
		{name: "HugeMalformedStatusLine", receiver: answering("HTTP/1.1" + strings.Repeat("\xff\x00\x1b", 20<<10) + "\r\n\r\n"),
			wantKind: conn, wantMessage: "malformed HTTP response"},
		// The reason phrase is not read: the message names the code's own.
		{name: "NULInReasonPhrase", receiver: answering("HTTP/1.1 500 Bad\x00Thing\xff\x1b[0m\r\nContent-Length: 0\r\n\r\n"),
			wantKind: status, wantCode: 500, wantMessage: "500 Internal Server Error"},
		// 000 is no HTTP status: recorded as one, it would read as "no
		// answer" with the kind of an answer.
		{name: "StatusCodeZero", receiver: answering("HTTP/1.1 000 Nothing\r\nContent-Length: 0\r\n\r\n"),
			wantKind: conn, wantMessage: "000"},

		// HTTP/2 has limits of its own, which the transport derives from
		// maxResponseHeader.
		{name: "NULInBodyHTTP2", receiver: servingHTTP2(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			_, _ = io.WriteString(w, "ok\x00\xff\x1b[2Jdone")
		}), wantKind: status, wantCode: 500, wantSnippet: "done"},
		{name: "HugeHeaderHTTP2", receiver: servingHTTP2(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Big", strings.Repeat("a", 1<<20))
			w.WriteHeader(200)
		}), wantKind: conn},
		{name: "InformationalStormHTTP2", receiver: servingHTTP2(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "</a.css>; rel=preload")
			for range 100_000 {
				if r.Context().Err() != nil {
					return
				}
				w.WriteHeader(http.StatusEarlyHints)
			}
		}), wantKind: conn},
	}
}

// TestPostWithin_HostileReceivers: whatever a receiver does, an attempt
// ends within its timeout with a truthful outcome, and every text it
// keeps is valid UTF-8 without NUL or control characters, bounded.
func TestPostWithin_HostileReceivers(t *testing.T) {
	loopback := &netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	hc := NewHTTPClientTLS(loopback, hostileTimeout, nil, &tls.Config{RootCAs: httptestRoots(t)})
	for _, tt := range hostileCases() {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.receiver(t)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			r, _ := postWithin(context.Background(), nil, hc, hostileTimeout, 0, url, []byte(`{}`), http.Header{"Content-Type": {"application/json"}})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			t.Logf("%s in %s: kind %q, code %d, message %.200q, snippet %.80q, retry after %s, directive %q",
				tt.name, took.Round(time.Millisecond), r.Kind, r.StatusCode, r.Message, r.Snippet, r.RetryAfter, r.Directive)
			if took > hostileTimeout+hostileMargin {
				t.Errorf("took %s, want at most %s", took, hostileTimeout+hostileMargin)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > hostileAllocMax {
				t.Errorf("allocated %d bytes, want at most %d", alloc, hostileAllocMax)
			}
			if r.Kind != tt.wantKind || r.StatusCode != tt.wantCode {
				t.Errorf("kind %q, code %d; want %q, %d", r.Kind, r.StatusCode, tt.wantKind, tt.wantCode)
			}
			if r.RetryAfter != tt.wantRetryAfter || r.Directive != tt.wantDirective {
				t.Errorf("retry after %s, directive %q; want %s, %q", r.RetryAfter, r.Directive, tt.wantRetryAfter, tt.wantDirective)
			}
			checkClean(t, "message", r.Message, messageLength, tt.wantMessage)
			checkClean(t, "snippet", r.Snippet, snippetLength, tt.wantSnippet)
		})
	}
}

// checkClean fails unless s is fit to store and log, and holds want.
func checkClean(t *testing.T, what, s string, maxBytes int, want string) {
	t.Helper()
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r >= 0x7f && r < 0xa0 }) {
		t.Errorf("%s %q is not clean text", what, s)
	}
	if len(s) > maxBytes {
		t.Errorf("%s is %d bytes, want at most %d", what, len(s), maxBytes)
	}
	if !strings.Contains(s, want) {
		t.Errorf("%s %.200q does not say %q", what, s, want)
	}
}

// TestParseRetryAfter_HostileValues: a Retry-After that is not one we
// understand is none, and a huge one is the ceiling, never a wrapped wait.
func TestParseRetryAfter_HostileValues(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"18446744074", retryAfterCeiling},             // its nanoseconds wrap to 0.29 s
		{"9223372037", retryAfterCeiling},              // its nanoseconds wrap negative
		{"99999999999999999999999", retryAfterCeiling}, // beyond int64
		{"31536001", retryAfterCeiling},
		{"120", 2 * time.Minute},
		{"+120", 0},
		{"1\x00", 0},
		{"1\xff", 0},
		{"\x1b[2J", 0},
		{"1" + strings.Repeat("0", 70), 0},
		{now.Add(1000 * 24 * time.Hour).Format(http.TimeFormat), retryAfterCeiling},
		{now.Add(time.Minute).Format(http.TimeFormat) + "\x00", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestDirective_HostileValues: only a directive, in any case and
// surrounded by spaces, is one.
func TestDirective_HostileValues(t *testing.T) {
	tests := []struct{ in, want string }{
		{" Abort ", webhooks.DirectiveAbort},
		{"DISABLE", webhooks.DirectiveDisable},
		{"abort\x00", ""},
		{"abort\xff", ""},
		{"\x1babort", ""},
		{"diſable", ""}, // U+017F folds to s, and is not ASCII
		{"abort" + strings.Repeat(" ", 1<<16) + "x", ""},
	}
	for _, tt := range tests {
		if got := directive(http.Header{webhooks.HeaderDirective: {tt.in}}); got != tt.want {
			t.Errorf("directive(%.40q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestAttemptMessage_HostileLengthKeepsTheCause: a long message is cut
// in its middle, so that the error's cause after a long client_url or
// quote stays.
func TestAttemptMessage_HostileLengthKeepsTheCause(t *testing.T) {
	longURL := "https://example.com/" + strings.Repeat("p\xff\x00", 700)
	tests := []struct{ name, in, wantEnd string }{
		{"LongURL", `Post "` + longURL + `": dial tcp 10.0.0.1:443: connect: connection refused`, "connect: connection refused"},
		{"LongQuote", "malformed HTTP response " + strings.Repeat("\xff\x00é", 5000) + " end", " end"},
		{"Short", "refused\x00", "refused\uFFFD"},
		// Short in bytes, long once its invalid bytes are replaced.
		{"GrowsWhenCleaned", strings.Repeat("\xff", 1000) + " refused", " refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := attemptMessage(tt.in)
			checkClean(t, "message", got, messageLength, "")
			if !strings.HasSuffix(got, tt.wantEnd) {
				t.Errorf("message ends %q, want %q", got[max(0, len(got)-60):], tt.wantEnd)
			}
		})
	}
}
