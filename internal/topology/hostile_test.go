package topology_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/topology"
)

// TestChaosReceiver_HostileAnswersAreWhatTheySay: the chaos receiver in
// hostile mode answers each of HostileAnswers in turn, and a sender with
// the chaos timeout reads each as its Recorded says (a status, a timeout,
// or a failed connection); the receiver notes which answer it gave.
func TestChaosReceiver_HostileAnswersAreWhatTheySay(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const timeout = 500 * time.Millisecond
	recv, err := topology.StartChaosReceiver(ctx, timeout)
	if err != nil {
		t.Fatal(err)
	}
	recv.SetMode("wsu_h", topology.AnswerHostile)
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	for i, h := range topology.HostileAnswers {
		body := `{"webhooksID":"wsu_h","eventId":"wev_` + strconv.Itoa(i) + `"}`
		outcome := "connection"
		resp, err := hc.Post(recv.URLFor(1), "application/json", strings.NewReader(body))
		if err == nil {
			// As the service does: a bounded head of the body, then close.
			outcome = strconv.Itoa(resp.StatusCode)
			_, err = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			outcome = "timeout"
		}
		if outcome != h.Recorded {
			t.Errorf("answer %d (%s): the sender read %s (%v), want %s", i, h.Name, outcome, err, h.Recorded)
		}
	}
	arrivals := recv.Arrivals()
	if len(arrivals) != len(topology.HostileAnswers) {
		t.Fatalf("%d arrivals, want one for each hostile answer", len(arrivals))
	}
	for i, a := range arrivals {
		if a.Hostile != topology.HostileAnswers[i].Name {
			t.Errorf("arrival %d noted hostile answer %q, want %q", i, a.Hostile, topology.HostileAnswers[i].Name)
		}
	}
}

// TestChaosReceiver_RefusesSomeDeliveriesForGood: with RefuseOneIn, the
// receiver answers 500 to every attempt of about one delivery in that
// many, whatever the webhook's mode, and 200 to the others.
func TestChaosReceiver_RefusesSomeDeliveriesForGood(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recv, err := topology.StartChaosReceiver(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	recv.RefuseOneIn = 4
	recv.SetMode("wsu_b", topology.AnswerHostile)
	refused := 0
	for i := range 80 {
		hook := []string{"wsu_a", "wsu_b"}[i%2]
		event := "wev_" + strconv.Itoa(i)
		want := http.StatusOK
		if recv.Refuses(hook, event) {
			want = http.StatusInternalServerError
			refused++
		} else if hook == "wsu_b" {
			continue // hostile: another test's subject
		}
		for attempt := range 2 {
			resp, err := http.Post(recv.URLFor(1), "application/json",
				strings.NewReader(`{"webhooksID":"`+hook+`","eventId":"`+event+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s/%s attempt %d: %d, want %d", hook, event, attempt+1, resp.StatusCode, want)
			}
		}
	}
	if refused < 8 || refused > 40 {
		t.Errorf("%d of 80 deliveries refused, want about one in 4", refused)
	}
}
