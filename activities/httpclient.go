package activities

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/goroutines"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/untrusted"
)

// Response handling limits: a receiver's answer is input, read and kept
// only up to these.
const (
	maxResponseRead = 64 << 10 // read (and discard) at most this much of a response
	snippetLength   = 512      // keep this much of it in the attempt record
	// maxResponseHeader bounds the status line and headers, 1xx answers
	// included (Go's default is 10 MB: a storm of 100 Continue made one
	// attempt allocate 90 MB before it failed).
	maxResponseHeader = 64 << 10
	// messageLength bounds an attempt's message: a transport error quotes
	// what the receiver sent (a malformed status line of 60 KB became a
	// 240 KB message).
	messageLength = 1024
	// messageHead is how much of the start of a long message is kept; the
	// rest goes to its end, where an error's cause is.
	messageHead = 256
	// retryAfterLength: a longer Retry-After is none we understand (an
	// HTTP date is 29 bytes).
	retryAfterLength = 64
	// retryAfterCeiling bounds a Retry-After, so that its nanoseconds fit
	// a time.Duration (18446744074 s wrapped to 0.29 s); the retry
	// schedule caps the wait far lower (RetryAfterMax).
	retryAfterCeiling = 365 * 24 * time.Hour
)

// NewHTTPClient returns the one HTTP client deliveries use: connections go
// only to addresses policy allows (checked on the resolved address at dial
// time, so DNS rebinding cannot get around it), no proxy, no redirects.
// timeout bounds the connection and the wait for the answer's headers
// (the attempt timeout plus the time late answers are waited for). wrap,
// when not nil, wraps the transport (tracing, metrics).
func NewHTTPClient(policy *netguard.Policy, timeout time.Duration, wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	return NewHTTPClientTLS(policy, timeout, wrap, nil)
}

// NewHTTPClientTLS is NewHTTPClient with a TLS configuration: the roots
// that verify receivers (nil: the system's) and, for a webhook with a
// client certificate, that certificate (WithClientCertificate).
func NewHTTPClientTLS(policy *netguard.Policy, timeout time.Duration, wrap func(http.RoundTripper) http.RoundTripper, tlsConfig *tls.Config) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	var rt http.RoundTripper = &http.Transport{
		Proxy:             nil,
		DialContext:       policy.DialContext(dialer),
		TLSClientConfig:   tlsConfig,
		ForceAttemptHTTP2: true,
		// As many idle connections a host as attempts in flight to one
		// (DELIVERY_MAX_IN_FLIGHT_PER_DESTINATION's default): with fewer,
		// every answer above them closed its connection and the next
		// attempt dialled a new one (2,000 deliveries to one host behind a
		// 200 ms receiver: 1,034 TCP connections opened against 386).
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		// HTTP/2's header list limit follows this one.
		MaxResponseHeaderBytes: maxResponseHeader,
	}
	if wrap != nil {
		rt = wrap(inMemoryBody{next: rt}) // what it wraps the body in, net/http does not know to be in memory
	}
	return &http.Client{
		Transport: rt,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// inMemoryBodyMax bounds the request bodies inMemoryBody copies (a
// delivery's body is a few hundred bytes; larger ones go as they are).
const inMemoryBodyMax = 64 << 10

// inMemoryBody hands the transport beneath it a request body it knows is
// in memory, so an attempt's headers and body leave in one write (one TCP
// segment). A body wrapped by a layer above (otelhttp's transport wraps it
// to count the bytes read) made net/http flush the headers on their own
// first: a second write, a second segment and a second read at the
// receiver for every attempt. It reads the body through that layer (its
// count stays right) and closes it, as a transport must.
type inMemoryBody struct{ next http.RoundTripper }

func (t inMemoryBody) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength <= 0 || r.ContentLength > inMemoryBodyMax {
		return t.next.RoundTrip(r)
	}
	body := make([]byte, r.ContentLength)
	_, err := io.ReadFull(r.Body, body)
	r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	out := r.WithContext(r.Context()) // a shallow copy: a transport leaves its request as it came
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.next.RoundTrip(out)
}

// WithClientCertificate returns a copy of base (nil: the defaults) that
// presents cert whenever a receiver asks for a client certificate, even
// one whose issuer the receiver does not list: the receiver decides, and
// the attempt records its refusal.
func WithClientCertificate(base *tls.Config, cert tls.Certificate) *tls.Config {
	c := &tls.Config{}
	if base != nil {
		c = base.Clone()
	}
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	return c
}

// clientCertificateKey names, in the headers a signer sets, the SHA-256 of
// the client certificate the attempt presents. post takes it out before
// sending; not being a valid header name, it could never be sent.
const clientCertificateKey = "jobhooks client certificate"

// postResult is what one POST produced.
type postResult struct {
	StartedAt  time.Time
	Duration   time.Duration
	StatusCode int
	Kind       string
	Message    string
	Snippet    string
	RetryAfter time.Duration
	// Directive is what the receiver asked with its answer's
	// Webhook-Delivery header: webhooks.DirectiveAbort, webhooks.DirectiveDisable or "".
	Directive string
	// Late, when not nil, may deliver an answer after the deadline.
	Late <-chan LateAnswer
	// NotStarted: nothing was sent (no slot before ctx ended, or start
	// said no); the attempt does not count.
	NotStarted bool
	// TLSRefused: the receiver refused the TLS handshake (a TLS alert).
	TLSRefused bool
}

// attemptGate decides whether an attempt still starts: one waiting for a
// slot stops waiting when ctx ends, and once it holds a slot, start says
// whether it may go. A gated attempt that does not start sends nothing
// (NotStarted), and one that starts runs to its own deadline.
type attemptGate struct {
	ctx   context.Context
	start func() bool
}

// tlsRefusalHint says which client certificate a refused handshake
// presented, if any: most refusals are about it.
func tlsRefusalHint(certificate []string) string {
	if certificate == nil {
		return "; this webhook presents no client certificate (its delivery settings have none)"
	}
	return fmt.Sprintf("; the receiver did not accept this webhook's client certificate (SHA-256 %s)", certificate[0])
}

// LateAnswer is an answer that came after the attempt's deadline, while
// the attempt had already failed as a timeout: the receiver usually did
// its work, and its operator should see that.
type LateAnswer struct {
	StatusCode int
	// After is the time from sending to the complete answer.
	After time.Duration
}

// postWithin sends body to url and returns what came within timeout,
// reading the whole response (up to a cap) inside the same limit: a
// receiver that answers late has failed. When lateWait > 0, the request is
// not abandoned at the deadline: late, when not nil, delivers the answer
// that completes within lateWait more (and is closed without one
// otherwise), while the caller goes on.
//
// The request runs on a goroutine of pool (a new one when nil).
func postWithin(ctx context.Context, pool *goroutines.Pool, hc *http.Client, timeout, lateWait time.Duration, url string, body []byte, headers http.Header) (r postResult, late <-chan LateAnswer) {
	reqCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout+lateWait)
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		cancel()
		return failed(deliveries.KindInvalidURL, "invalid client_url: "+err.Error()), nil
	}
	req.Header = headers
	started := time.Now()
	answered := make(chan postResult, 1)
	pool.Go(func() { answered <- send(reqCtx, hc, req, timeout) })
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case r := <-answered:
		cancel()
		return r, nil
	case <-ctx.Done(): // the worker is stopping
		cancel()
		<-answered
		return transportFailure(ctx, ctx.Err(), timeout), nil
	case <-deadline.C:
	}
	timedOut := postResult{Kind: deliveries.KindTimeout, Message: fmt.Sprintf("no complete response within %s", timeout)}
	if lateWait <= 0 {
		cancel()
		<-answered
		return timedOut, nil
	}
	out := make(chan LateAnswer, 1)
	go func() {
		defer cancel()
		defer close(out)
		if r := <-answered; r.StatusCode > 0 && r.Kind != deliveries.KindTimeout {
			out <- LateAnswer{StatusCode: r.StatusCode, After: time.Since(started)}
		}
	}()
	return timedOut, out
}

// send makes the request and reads the answer; timeout only names the
// limit in messages.
func send(ctx context.Context, hc *http.Client, req *http.Request, timeout time.Duration) postResult {
	resp, err := hc.Do(req)
	if err != nil {
		return transportFailure(ctx, err, timeout)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 100 {
		// 000 to 099 are no HTTP status (RFC 9110 15); recorded as one, 0
		// would read as no answer at all.
		return failed(deliveries.KindConnection, fmt.Sprintf("the receiver answered status code %03d, which is not HTTP", resp.StatusCode))
	}
	// The status is the receiver's answer: a body cut short afterwards (a
	// reset connection) does not change it. A body still arriving when the
	// request's context ends does: the answer was not complete.
	head, err := readAnswer(resp.Body)
	if err != nil {
		if f := transportFailure(ctx, err, timeout); f.Kind == deliveries.KindTimeout {
			return f
		}
	}
	r := postResult{StatusCode: resp.StatusCode, Snippet: snippet(head), Directive: directive(resp.Header)}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		r.Kind = deliveries.KindHTTPStatus
		r.Message = fmt.Sprintf("receiver answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			r.Message += " (redirects are not followed)"
		}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			r.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
	}
	return r
}

// readAnswer reads a body up to maxResponseRead (so that a short one
// leaves its connection reusable) and returns its first snippetLength
// bytes, holding no more than those.
func readAnswer(body io.Reader) ([]byte, error) {
	head := make([]byte, snippetLength)
	n, err := io.ReadFull(body, head)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return head[:n], nil
	}
	if err != nil {
		return head[:n], err
	}
	if _, err = io.CopyN(io.Discard, body, maxResponseRead-snippetLength); err == io.EOF {
		err = nil
	}
	return head, err
}

func transportFailure(ctx context.Context, err error, timeout time.Duration) postResult {
	switch {
	case errors.Is(err, netguard.ErrDestinationNotAllowed):
		return failed(deliveries.KindNotAllowed, err.Error())
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return failed(deliveries.KindTimeout, fmt.Sprintf("no complete response within %s", timeout))
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return failed(deliveries.KindTimeout, fmt.Sprintf("no complete response within %s", timeout))
	}
	// A TLS alert from the receiver: crypto/tls reports it as a
	// "remote error" whose text is the alert ("tls: certificate required").
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "remote error" {
		r := failed(deliveries.KindConnection, "the receiver refused the TLS handshake: "+opErr.Err.Error())
		r.TLSRefused = true
		return r
	}
	// net/http's errors quote what the receiver sent (a malformed status
	// line or header).
	return failed(deliveries.KindConnection, err.Error())
}

// failed is an attempt that failed as msg says.
func failed(kind, msg string) postResult {
	return postResult{Kind: kind, Message: attemptMessage(msg)}
}

// attemptMessage makes msg fit to store and log: without NUL or control
// characters, and at most messageLength bytes. A longer one keeps its
// start and its end, where an error's cause is (after a client_url of up
// to 2,048 characters, or a quote of what the receiver sent).
func attemptMessage(msg string) string {
	return untrusted.Ends(msg, messageLength, messageHead, " … ")
}

// parseRetryAfter reads delta-seconds or an HTTP date, up to
// retryAfterCeiling; 0 when absent or bad.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > retryAfterLength {
		return 0
	}
	if isDigits(v) {
		secs, _ := strconv.ParseInt(v, 10, 64) // out of range: the largest int64
		return time.Duration(min(secs, int64(retryAfterCeiling/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), retryAfterCeiling)
	}
	return 0
}

// isDigits reports whether s is delta-seconds: 1*DIGIT (RFC 9110 10.2.3).
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func snippet(b []byte) string { return untrusted.Bytes(b, snippetLength) }

// directive reads the receiver's directive; anything else is none. A
// value longer than any directive is none before it is lowered (a header
// of 64 KB would be copied for nothing).
func directive(h http.Header) string {
	v := strings.TrimSpace(h.Get(webhooks.HeaderDirective))
	if len(v) > max(len(webhooks.DirectiveAbort), len(webhooks.DirectiveDisable)) {
		return ""
	}
	switch v = strings.ToLower(v); v {
	case webhooks.DirectiveAbort, webhooks.DirectiveDisable:
		return v
	}
	return ""
}
