package topology

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"
)

// HostileAnswer is one way a receiver's answer is hostile input: a body
// or headers with NUL and invalid UTF-8, a huge body, an answer that
// trickles past the delivery timeout. Recorded is what the service must
// record for an attempt answered so (an attempt row's status code, or
// its error kind): the truthful outcome given what came back.
type HostileAnswer struct {
	Name     string
	Recorded string
	// write answers; it returns the status a sender could read (0 when
	// the answer is not HTTP) and false when the sender went away before
	// the answer was whole.
	write func(r *ChaosReceiver, w http.ResponseWriter) (status int, whole bool)
}

// HostileAnswers are the answers a hostile receiver gives, in turn.
var HostileAnswers = []HostileAnswer{
	{Name: "200, NUL and invalid UTF-8 in the body", Recorded: "200", write: func(_ *ChaosReceiver, w http.ResponseWriter) (int, bool) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		_, err := w.Write([]byte("ok\x00\x00 \xff\xfe \xc3\x28 \x1b[31m done"))
		return http.StatusOK, err == nil
	}},
	{Name: "500, NUL and invalid UTF-8 in the body", Recorded: "500", write: func(_ *ChaosReceiver, w http.ResponseWriter) (int, bool) {
		w.WriteHeader(http.StatusInternalServerError)
		_, err := w.Write([]byte("\xff\xfe\x00 failed \xed\xa0\x80 \x00"))
		return http.StatusInternalServerError, err == nil
	}},
	// Bytes >= 0x80 are obs-text, allowed in a header: they reach the
	// sender, which must find no wait and no directive in them.
	{Name: "503, unreadable Retry-After and Webhook-Delivery", Recorded: "503", write: func(_ *ChaosReceiver, w http.ResponseWriter) (int, bool) {
		return http.StatusServiceUnavailable, writeRaw(w, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: \xff\xfe3600\r\n"+
			"Webhook-Delivery: \xffabort\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	}},
	// NUL is not a header byte: the answer is not HTTP, and the sender
	// can read no status from it (it failed as a connection).
	{Name: "200, NUL in a header", Recorded: "connection", write: func(_ *ChaosReceiver, w http.ResponseWriter) (int, bool) {
		return 0, writeRaw(w, "HTTP/1.1 200 OK\r\nRetry-After: 1\x00\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	}},
	// The sender reads a bounded head of it and lets the rest go.
	{Name: "200, a 64 MiB body", Recorded: "200", write: func(_ *ChaosReceiver, w http.ResponseWriter) (int, bool) {
		const size = 64 << 20
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.WriteHeader(http.StatusOK)
		chunk := bytes.Repeat([]byte("huge\x00\xff body "), 4096)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
				break // the sender has what it reads and closed: the answer is whole to it
			}
		}
		return http.StatusOK, true
	}},
	{Name: "200, a body that trickles past the timeout", Recorded: "timeout", write: func(r *ChaosReceiver, w http.ResponseWriter) (int, bool) {
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		until := time.Now().Add(r.HangFor)
		for time.Now().Before(until) {
			if _, err := w.Write([]byte("x")); err != nil || rc.Flush() != nil {
				return http.StatusOK, false
			}
			time.Sleep(100 * time.Millisecond)
		}
		return http.StatusOK, true
	}},
	{Name: "200, headers that trickle past the timeout", Recorded: "timeout", write: func(r *ChaosReceiver, w http.ResponseWriter) (int, bool) {
		conn, buf, ok := hijack(w)
		if !ok {
			return 0, false
		}
		defer conn.Close()
		until := time.Now().Add(r.HangFor)
		line := "HTTP/1.1 200 OK\r\n"
		for time.Now().Before(until) {
			if _, err := buf.WriteString(line); err != nil || buf.Flush() != nil {
				return http.StatusOK, false
			}
			line = "X-Trickle: \xff\r\n"
			time.Sleep(100 * time.Millisecond)
		}
		_, err := buf.WriteString("Content-Length: 0\r\nConnection: close\r\n\r\n")
		return http.StatusOK, err == nil && buf.Flush() == nil
	}},
}

// HostileAnswerNamed is the hostile answer of that name.
func HostileAnswerNamed(name string) (HostileAnswer, bool) {
	for _, h := range HostileAnswers {
		if h.Name == name {
			return h, true
		}
	}
	return HostileAnswer{}, false
}

// hijack takes the connection from net/http, to write what it would not.
func hijack(w http.ResponseWriter) (net.Conn, *bufio.ReadWriter, bool) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, false
	}
	_ = conn.SetWriteDeadline(time.Now().Add(time.Minute))
	return conn, buf, true
}

// writeRaw writes a whole answer as bytes and closes the connection.
func writeRaw(w http.ResponseWriter, answer string) bool {
	conn, buf, ok := hijack(w)
	if !ok {
		return false
	}
	defer conn.Close()
	_, err := buf.WriteString(answer)
	return err == nil && buf.Flush() == nil
}
