package topology

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jobhooks/jobhooks/internal/procstat"
)

// The floor is what a bare Go HTTP server costs a request on this machine
// at a given steady rate: the same driver as the API's (API.Send), a
// handler with nothing behind it. The API's CPU per event at that rate is
// read against it: what is above it is the service's own work; what is
// below it no change to the service can save (docs/performance.md, "The
// floor of a request").

// floorServerEnv, set to a delay, makes a test binary that calls
// ServeFloorIfAsked serve as the floor server instead of running tests.
const floorServerEnv = "TOPOLOGY_FLOOR_SERVER"

// ServeFloorIfAsked serves the floor and exits when the process was
// started by MeasureFloor; otherwise it returns at once. Call it first in
// a test binary's TestMain.
func ServeFloorIfAsked() {
	raw, ok := os.LookupEnv(floorServerEnv)
	if !ok {
		return
	}
	delay, err := time.ParseDuration(raw)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", floorServerEnv, err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	srv := &http.Server{Handler: FloorHandler(delay), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintln(os.Stderr, srv.Serve(ln))
	os.Exit(1)
}

// FloorHandler answers an ingestion request (POST
// /internal/v1/job-run-events) with nothing behind it: it decodes the
// event's JSON, waits delay (the API answers once the group commit that
// holds the event has stored it), and answers 202 with the event's id, as
// the API does. Anything else is a 400.
func FloorHandler(delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var event struct {
			EventID string          `json:"eventId"`
			Data    json.RawMessage `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&event); err != nil || event.EventID == "" || len(event.Data) == 0 {
			http.Error(w, "want an ingestion request", http.StatusBadRequest)
			return
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]string{"eventId": event.EventID}})
	})
}

// Floor is what the floor server used over a run of Requests requests.
type Floor struct {
	Requests int
	CPU      time.Duration
	Switches int64 // the server's context switches, every thread's
	Answers  Stats // how long the requests took to answer
}

// CPUMsPerRequest is the server's CPU a request, in milliseconds.
func (f Floor) CPUMsPerRequest() float64 {
	return float64(f.CPU.Microseconds()) / 1000 / float64(max(f.Requests, 1))
}

// SwitchesPerRequest is the server's context switches a request.
func (f Floor) SwitchesPerRequest() float64 {
	return float64(f.Switches) / float64(max(f.Requests, 1))
}

// MeasureFloor starts exe (a test binary whose TestMain calls
// ServeFloorIfAsked) as the floor server answering after delay, sends it
// events as API.Send does the API's (concurrency senders, one event a
// request, event i no earlier than i*interval after the start), and
// returns what the server used meanwhile. The server ends with ctx or
// when MeasureFloor returns.
func MeasureFloor(ctx context.Context, exe string, delay time.Duration, events, concurrency int, interval time.Duration) (Floor, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), floorServerEnv+"="+delay.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Floor{}, err
	}
	if err := cmd.Start(); err != nil {
		return Floor{}, fmt.Errorf("floor server: %w", err)
	}
	defer func() { _ = cmd.Wait() }()
	defer cancel() // before the Wait: it kills the server
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return Floor{}, fmt.Errorf("floor server's address: %w", err)
	}
	recv, err := StartReceiver(ctx) // only to note the answers: nothing is delivered
	if err != nil {
		return Floor{}, err
	}
	api := API{BaseURL: "http://" + strings.TrimSpace(addr), InternalToken: "floor",
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	evs := make([]Event, events)
	for i := range evs {
		evs[i] = Event{AccountID: 1, JobID: concentratedJob}
	}
	// A few requests first, so the connections are open and the server warm.
	if err := api.Send(ctx, recv, fmt.Sprintf("floor-warm-%d", time.Now().UnixNano()), evs[:min(len(evs), concurrency)], concurrency, 0); err != nil {
		return Floor{}, fmt.Errorf("floor warm-up: %w", err)
	}
	recv.Reset()
	pid := cmd.Process.Pid
	cpu0, sw0, err := usage(pid)
	if err != nil {
		return Floor{}, err
	}
	if err := api.Send(ctx, recv, fmt.Sprintf("floor-%d", time.Now().UnixNano()), evs, concurrency, interval); err != nil {
		return Floor{}, fmt.Errorf("floor: %w", err)
	}
	cpu1, sw1, err := usage(pid)
	if err != nil {
		return Floor{}, err
	}
	return Floor{Requests: events, CPU: cpu1 - cpu0, Switches: sw1 - sw0, Answers: recv.Stats()}, nil
}

// usage is a process's CPU time and context switches so far.
func usage(pid int) (time.Duration, int64, error) {
	st, err := procstat.Read(pid)
	if err != nil {
		return 0, 0, err
	}
	sw, err := procstat.Switches(pid)
	if err != nil {
		return 0, 0, err
	}
	return st.Own, sw, nil
}
