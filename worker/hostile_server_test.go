package worker_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// hostileServer is a loopback receiver that writes raw bytes: what a
// receiver sends back is input the service must bound and clean, and
// net/http's server would refuse to write most of it (NUL in headers, a
// 1xx storm, a status line of its own). It reads each request whole (no
// request, when hang is set: it never answers the TLS handshake), notes
// when it arrived, and runs answer on the connection, which it then
// closes. Every connection ends when the test does.
type hostileServer struct {
	URL    string
	ln     net.Listener
	answer func(c *hostileConn)
	hang   bool // accept and say nothing, not even a TLS handshake

	mu       sync.Mutex
	arrivals []time.Time
	conns    map[net.Conn]bool
	stop     chan struct{}
	wg       sync.WaitGroup
}

// hostileConn is one request's connection, for an answer to write to.
type hostileConn struct {
	net.Conn
	Request *http.Request
	// Stop is closed when the test ends: an answer that never ends
	// (a trickle, a storm) returns then, or when a write fails.
	Stop <-chan struct{}
}

// write writes b, false once the client has gone or the test ended.
func (c *hostileConn) write(b []byte) bool {
	select {
	case <-c.Stop:
		return false
	default:
	}
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Write(b)
	return err == nil
}

// trickle writes b every interval until the client goes.
func (c *hostileConn) trickle(b []byte, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for c.write(b) {
		select {
		case <-c.Stop:
			return
		case <-t.C:
		}
	}
}

func newHostileServer(t *testing.T, scheme string, hang bool, answer func(c *hostileConn)) *hostileServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &hostileServer{URL: scheme + "://" + ln.Addr().String() + "/hook", ln: ln, answer: answer, hang: hang,
		conns: map[net.Conn]bool{}, stop: make(chan struct{})}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.close)
	return s
}

func (s *hostileServer) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[conn] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				conn.Close()
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
			}()
			s.handle(conn)
		}()
	}
}

func (s *hostileServer) handle(conn net.Conn) {
	if s.hang {
		s.noteArrival()
		<-s.stop
		return
	}
	req, err := http.ReadRequest(bufio.NewReader(conn))
	if err != nil {
		return
	}
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return
	}
	s.noteArrival()
	s.answer(&hostileConn{Conn: conn, Request: req, Stop: s.stop})
}

func (s *hostileServer) noteArrival() {
	s.mu.Lock()
	s.arrivals = append(s.arrivals, time.Now())
	s.mu.Unlock()
}

// got is how many requests (connections, when hang) arrived.
func (s *hostileServer) got() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.arrivals)
}

func (s *hostileServer) close() {
	close(s.stop)
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// rawAnswer writes a whole answer: status line, headers, and a body of
// the length its Content-Length says.
func rawAnswer(statusLine string, headers []string, body []byte) func(c *hostileConn) {
	return func(c *hostileConn) {
		var b bytes.Buffer
		b.WriteString(statusLine + "\r\n")
		for _, h := range headers {
			b.WriteString(h + "\r\n")
		}
		b.WriteString("Connection: close\r\n")
		b.WriteString("Content-Length: " + itoa(int64(len(body))) + "\r\n\r\n")
		b.Write(body)
		c.write(b.Bytes())
	}
}

// hugeBody answers 200 with a body of size bytes (NUL and invalid UTF-8
// among them), written as fast as the client reads.
func hugeBody(size int64) func(c *hostileConn) {
	return func(c *hostileConn) {
		if !c.write([]byte("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: " + itoa(size) + "\r\n\r\n")) {
			return
		}
		chunk := bytes.Repeat([]byte("huge\x00\xff\xfe body "), 64<<10/16)
		for sent := int64(0); sent < size; sent += int64(len(chunk)) {
			if !c.write(chunk[:min(int64(len(chunk)), size-sent)]) {
				return
			}
		}
	}
}

// gzipBomb is a gzip stream of n members, each 16 MiB of zeros: n×16 MiB
// once decompressed, about n×16 KiB on the wire (gzip readers read every
// member of a multistream).
func gzipBomb(t *testing.T, n int) []byte {
	t.Helper()
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 16 {
		if _, err := zw.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat(member.Bytes(), n)
}
