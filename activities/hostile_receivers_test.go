package activities

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The receivers of TestPostWithin_HostileReceivers: each starts on
// loopback, returns its URL and ends with its test.

// httptestRoots trusts the certificate httptest's TLS servers present.
func httptestRoots(t *testing.T) *x509.CertPool {
	t.Helper()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return roots
}

// servingHTTP2 is a receiver that serves h over TLS and must be asked in
// HTTP/2.
func servingHTTP2(h http.HandlerFunc) func(t *testing.T) string {
	return func(t *testing.T) string {
		var notHTTP2 atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 2 {
				notHTTP2.Add(1)
			}
			h(w, r)
		}))
		srv.EnableHTTP2 = true
		srv.StartTLS()
		t.Cleanup(srv.Close)
		t.Cleanup(func() {
			if n := notHTTP2.Load(); n > 0 {
				t.Errorf("asked %d times in HTTP/1, want HTTP/2", n)
			}
		})
		return srv.URL + "/hook"
	}
}

// rawReceiver listens on loopback and hands each connection to speak, on
// its own goroutine; the test's end closes the listener and every
// connection, and waits for speak to return.
func rawReceiver(t *testing.T, scheme string, speak func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
		wg     sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			if closed {
				c.Close()
			}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				speak(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return scheme + "://" + ln.Addr().String() + "/hook"
}

// readRequest reads one request, body included, so that closing the
// connection afterwards sends FIN rather than RST.
func readRequest(c net.Conn) bool {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err == nil
}

// answering is a receiver that writes answer, byte for byte, to each
// request, then closes the connection.
func answering(answer string) func(t *testing.T) string {
	return func(t *testing.T) string {
		return rawReceiver(t, "http", func(c net.Conn) {
			if readRequest(c) {
				_, _ = io.WriteString(c, answer)
			}
		})
	}
}

// trickling is a receiver that writes head, then one more byte every
// 100 ms for as long as the connection stays open.
func trickling(head string) func(t *testing.T) string {
	return func(t *testing.T) string {
		return rawReceiver(t, "http", func(c net.Conn) {
			if !readRequest(c) {
				return
			}
			if _, err := io.WriteString(c, head); err != nil {
				return
			}
			for {
				time.Sleep(100 * time.Millisecond)
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
			}
		})
	}
}

// informationalStorm is a receiver that answers only 100 Continue, as
// fast as it is read, for as long as the connection stays open.
func informationalStorm(t *testing.T) string {
	storm := []byte(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 1000))
	return rawReceiver(t, "http", func(c net.Conn) {
		if !readRequest(c) {
			return
		}
		for {
			if _, err := c.Write(storm); err != nil {
				return
			}
		}
	})
}

// tlsHang accepts TCP connections for https and never says a word.
func tlsHang(t *testing.T) string {
	return rawReceiver(t, "https", func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
}

// redirectLoop redirects to itself; it must be asked once.
func redirectLoop(t *testing.T) string {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if n := asked.Load(); n != 1 {
			t.Errorf("the redirect loop was asked %d times, want once", n)
		}
	})
	return srv.URL + "/hook"
}

// hugeBody answers 200 with size bytes; fewer must have left it when the
// attempt ends (what the kernel's buffers hold, not the whole body).
func hugeBody(size int) func(t *testing.T) string {
	return func(t *testing.T) string {
		var written atomic.Int64
		done := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(done)
			chunk := bytes.Repeat([]byte("a"), 1<<20)
			w.Header().Set("Content-Length", strconv.Itoa(size))
			for range size / len(chunk) {
				n, err := w.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Errorf("the receiver was still writing its body 5 s after the attempt")
				return
			}
			if n := written.Load(); n >= int64(size) {
				t.Errorf("the whole body (%d bytes) was read", n)
			}
		})
		return srv.URL + "/hook"
	}
}

// gzipBomb answers code with size zero bytes, gzipped (a few hundred KB
// on the wire), whatever the request asked for.
func gzipBomb(code, size int) func(t *testing.T) string {
	return func(t *testing.T) string {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zeros := make([]byte, 1<<20)
		for range size / len(zeros) {
			_, _ = zw.Write(zeros)
		}
		_ = zw.Close()
		bomb := buf.Bytes()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", strconv.Itoa(len(bomb)))
			w.WriteHeader(code)
			_, _ = w.Write(bomb)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/hook"
	}
}
