package activities

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

func TestAnswerTimes_PatienceFollowsTheWorkersAnswers(t *testing.T) {
	const configured = 500 * time.Millisecond
	tests := []struct {
		name    string
		answers []time.Duration
		want    time.Duration
	}{
		{"too few answers to say", repeat(19, 2*time.Second), configured},
		{"fast answers keep the configured patience", repeat(100, 10*time.Millisecond), configured},
		{"answers at 200ms on a saturated box", repeat(100, 300*time.Millisecond), 900 * time.Millisecond},
		{"the 90th percentile, not the slowest few", append(repeat(95, 50*time.Millisecond), repeat(5, 5*time.Second)...), configured},
		{"at most four times the configured patience", repeat(100, 2*time.Second), 4 * configured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a answerTimes
			for _, d := range tt.answers {
				a.add(d)
			}
			if got := a.patienceAt(configured, time.Now()); got != tt.want {
				t.Errorf("patience = %s, want %s", got, tt.want)
			}
		})
	}
	t.Run("no patience stays none", func(t *testing.T) {
		var a answerTimes
		for _, d := range repeat(100, time.Second) {
			a.add(d)
		}
		if got := a.patienceAt(0, time.Now()); got != 0 {
			t.Errorf("patience = %s, want 0 (a lane waits)", got)
		}
	})
	t.Run("the window moves on", func(t *testing.T) {
		var a answerTimes
		for _, d := range repeat(answerWindow, time.Second) {
			a.add(d)
		}
		for _, d := range repeat(answerWindow, time.Millisecond) {
			a.add(d)
		}
		if got := a.patienceAt(configured, time.Now()); got != configured {
			t.Errorf("patience = %s after the box recovered, want %s", got, configured)
		}
	})
}

func repeat(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// TestPipeline_ASlowBoxDoesNotHandOverHealthyReceivers: while the worker's
// answers all take about 150 ms (a saturated box), a receiver answering in
// 250 ms is not taken for hung (the configured patience is 100 ms) and
// stays in the shared round, while one that does not answer within the
// grown patience is handed over.
func TestPipeline_ASlowBoxDoesNotHandOverHealthyReceivers(t *testing.T) {
	recv := newFakeReceiver(t, func(path string, _ int) (time.Duration, int) {
		if path == "/hung" {
			return 3 * time.Second, http.StatusNoContent
		}
		return 250 * time.Millisecond, http.StatusNoContent
	})
	h := newPipelineHarnessWith(t, Tuning{PageSize: 50, MaxInFlight: 8, Linger: 20 * time.Millisecond, Patience: 100 * time.Millisecond},
		nil, deliveries.NewStore(testenv.NewDatabase(t).Pool))
	for _, d := range repeat(100, 150*time.Millisecond) {
		h.rs.answers.add(d)
	}
	steady := h.due("wh_steady", recv.srv.URL+"/steady", 8)
	hung := h.due("wh_hung", recv.srv.URL+"/hung", 1)
	p := h.run(context.Background())
	defer Drain(context.Background(), h.rs)
	for _, id := range steady {
		if got := h.rec.rec[id].Status; got != deliveries.StatusSucceeded {
			t.Errorf("delivery %s of the 250ms receiver: %q in the round, want succeeded (not handed over)", id, got)
		}
	}
	if len(p.handed) != 1 || p.handed[0].DeliveryID != hung[0] {
		t.Fatalf("handed over %+v, want only the hung receiver's %s", p.handed, hung[0])
	}
}
