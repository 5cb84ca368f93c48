package activities

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/netguard"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"120", 2 * time.Minute},
		{"-5", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestPost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(204)
		case "/slow-body":
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			time.Sleep(600 * time.Millisecond) // headers in time, body too late
			_, _ = w.Write([]byte("late"))
		case "/busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(503)
			_, _ = w.Write([]byte(strings.Repeat("x", 2000)))
		case "/moved":
			http.Redirect(w, r, "/ok", http.StatusMovedPermanently)
		case "/cut-short":
			// 200 with a body announced longer than what is sent before
			// the connection is reset.
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
			_ = buf.Flush()
			if tcp, ok := conn.(*net.TCPConn); ok {
				_ = tcp.SetLinger(0) // RST, not FIN
			}
			_ = conn.Close()
		}
	}))
	defer srv.Close()
	hc := NewHTTPClient(&netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, time.Second, nil)
	tests := []struct {
		path       string
		wantCode   int
		wantKind   string
		retryAfter time.Duration
	}{
		{"/ok", 204, "", 0},
		{"/slow-body", 200, deliveries.KindTimeout, 0},
		{"/busy", 503, deliveries.KindHTTPStatus, 7 * time.Second},
		{"/moved", 301, deliveries.KindHTTPStatus, 0},
		// Decided: the receiver answered 200, so the attempt succeeded,
		// even if its body was cut short (receivers' bodies carry nothing
		// we act on).
		{"/cut-short", 200, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r, _ := postWithin(context.Background(), nil, hc, 500*time.Millisecond, 0, srv.URL+tt.path, []byte(`{}`), http.Header{})
			if tt.wantKind == deliveries.KindTimeout {
				if r.Kind != deliveries.KindTimeout {
					t.Errorf("kind = %q (%s), want timeout", r.Kind, r.Message)
				}
				return
			}
			if r.StatusCode != tt.wantCode || r.Kind != tt.wantKind || r.RetryAfter != tt.retryAfter {
				t.Errorf("post = %+v", r)
			}
			if len(r.Snippet) > snippetLength {
				t.Errorf("snippet is %d bytes", len(r.Snippet))
			}
		})
	}
	refused, _ := postWithin(context.Background(), nil, NewHTTPClient(&netguard.Policy{}, time.Second, nil), time.Second, 0, srv.URL+"/ok", nil, http.Header{})
	if refused.Kind != deliveries.KindNotAllowed {
		t.Errorf("loopback without allowance: %+v", refused)
	}
}

// TestPostWithin_LateAnswer: an answer after the deadline fails the attempt
// as a timeout at once, and, within the late wait, comes on the late
// channel with its status and time; without one the channel just closes.
func TestPostWithin_LateAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/late" {
			time.Sleep(700 * time.Millisecond)
			w.WriteHeader(http.StatusOK)
			return
		}
		time.Sleep(3 * time.Second) // never within the late wait
	}))
	defer srv.Close()
	hc := NewHTTPClient(&netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, 5*time.Second, nil)

	r, late := postWithin(context.Background(), nil, hc, 300*time.Millisecond, 2*time.Second, srv.URL+"/late", []byte(`{}`), http.Header{})
	if r.Kind != deliveries.KindTimeout || r.StatusCode != 0 {
		t.Fatalf("attempt = %+v; want a timeout, the answer not counted", r)
	}
	ans, ok := <-late
	if !ok || ans.StatusCode != http.StatusOK || ans.After < 700*time.Millisecond {
		t.Errorf("late answer = %+v (ok %v), want 200 after at least 700ms", ans, ok)
	}

	_, late = postWithin(context.Background(), nil, hc, 100*time.Millisecond, 300*time.Millisecond, srv.URL+"/never", []byte(`{}`), http.Header{})
	if ans, ok := <-late; ok {
		t.Errorf("got a late answer %+v from a receiver that never answered in time", ans)
	}
}

// TestHTTPClient_KeepsAHostsConnectionsBetweenBursts: 200 attempts in
// flight to one host, then 200 more, reuse the first burst's connections
// (with 64 idle a host, 136 were closed after each burst and dialled again).
func TestHTTPClient_KeepsAHostsConnectionsBetweenBursts(t *testing.T) {
	const burst = 200
	var opened atomic.Int32
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release // every request of a burst in flight at once
		w.WriteHeader(204)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	hc := NewHTTPClient(&netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, 5*time.Second, nil)
	for round := range 2 {
		release = make(chan struct{})
		arrived.Add(burst)
		var done sync.WaitGroup
		for range burst {
			done.Add(1)
			go func() {
				defer done.Done()
				res, err := hc.Post(srv.URL, "application/json", strings.NewReader(`{}`))
				if err != nil {
					t.Error(err)
					return
				}
				_ = res.Body.Close()
			}()
		}
		arrived.Wait()
		close(release)
		done.Wait()
		if got := opened.Load(); got != burst {
			t.Fatalf("after burst %d: %d connections opened, want %d (the first burst's, kept)", round+1, got, burst)
		}
	}
}

// countingBody stands for a layer above the transport that wraps request
// bodies (otelhttp counts the bytes read).
type countingBody struct {
	io.ReadCloser
	read   int
	closed bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += n
	return n, err
}

func (b *countingBody) Close() error { b.closed = true; return b.ReadCloser.Close() }

type wrapsBodies struct {
	next http.RoundTripper
	last *countingBody
}

func (w *wrapsBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	w.last = &countingBody{ReadCloser: r.Body}
	r.Body = w.last
	return w.next.RoundTrip(r)
}

// writeCounter counts the writes on the connections it dials.
type writeCounter struct{ writes atomic.Int32 }

type countedConn struct {
	net.Conn
	c *writeCounter
}

func (c countedConn) Write(p []byte) (int, error) { c.c.writes.Add(1); return c.Conn.Write(p) }

func (w *writeCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return countedConn{Conn: conn, c: w}, nil
}

// TestInMemoryBody_HeadersAndBodyLeaveInOneWrite: with a layer above that
// wraps the body, net/http wrote an attempt's headers and its body
// separately; beneath inMemoryBody they leave in one write, every byte
// still read through the layer, which sees its body closed.
func TestInMemoryBody_HeadersAndBodyLeaveInOneWrite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(204)
	}))
	defer srv.Close()
	body := strings.Repeat(`{"event":"job.run.completed"}`, 20)
	tests := []struct {
		name       string
		inMemory   bool
		wantWrites int32
	}{
		{"WrappedBodyAlone", false, 2},
		{"BeneathInMemoryBody", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var counter writeCounter
			var rt http.RoundTripper = &http.Transport{DialContext: counter.dial}
			if tt.inMemory {
				rt = inMemoryBody{next: rt}
			}
			wrapper := &wrapsBodies{next: rt}
			hc := &http.Client{Transport: wrapper}
			for i := range 3 {
				before := counter.writes.Load()
				res, err := hc.Post(srv.URL, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				if got := counter.writes.Load() - before; got != tt.wantWrites {
					t.Errorf("request %d: %d writes, want %d", i+1, got, tt.wantWrites)
				}
				if wrapper.last.read != len(body) || !wrapper.last.closed {
					t.Errorf("request %d: the layer above read %d of %d bytes (closed %v)", i+1, wrapper.last.read, len(body), wrapper.last.closed)
				}
			}
		})
	}
}

// TestNewHTTPClient_SendsThroughInMemoryBody: what wrap wraps is the
// transport beneath inMemoryBody.
func TestNewHTTPClient_SendsThroughInMemoryBody(t *testing.T) {
	var wrapped http.RoundTripper
	NewHTTPClient(&netguard.Policy{}, time.Second, func(rt http.RoundTripper) http.RoundTripper { wrapped = rt; return rt })
	if _, ok := wrapped.(inMemoryBody); !ok {
		t.Fatalf("wrap got %T, want inMemoryBody", wrapped)
	}
}
