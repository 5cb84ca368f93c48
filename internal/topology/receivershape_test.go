package topology

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseReceiverShape(t *testing.T) {
	for _, c := range []struct {
		name string
		o    ReceiverOptions
		want ReceiverShape
		err  string
	}{
		{"", ReceiverOptions{}, ReceiverShape{Kind: Instant}, ""},
		{"instant", ReceiverOptions{Delay: time.Second}, ReceiverShape{Kind: Instant}, ""},
		{"delay", ReceiverOptions{}, ReceiverShape{Kind: Delayed, Delay: 200 * time.Millisecond}, ""},
		{"delay", ReceiverOptions{Delay: 50 * time.Millisecond}, ReceiverShape{Kind: Delayed, Delay: 50 * time.Millisecond}, ""},
		{"knee", ReceiverOptions{}, ReceiverShape{Kind: Knee, Step: 20 * time.Millisecond}, ""},
		{"429", ReceiverOptions{}, ReceiverShape{Kind: Limited, Delay: 200 * time.Millisecond, Limit: 8}, ""},
		{"429", ReceiverOptions{Limit: 3, Delay: time.Second}, ReceiverShape{Kind: Limited, Delay: time.Second, Limit: 3}, ""},
		{"slow", ReceiverOptions{}, ReceiverShape{}, `unknown receiver "slow": want one of instant, delay, knee, 429`},
		{"delay", ReceiverOptions{Delay: time.Hour}, ReceiverShape{}, "between 0 and 30s"},
		{"429", ReceiverOptions{Limit: -1}, ReceiverShape{}, "the limit at least 1"},
	} {
		got, err := ParseReceiverShape(c.name, c.o)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseReceiverShape(%q, %+v) = %v, want an error with %q", c.name, c.o, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseReceiverShape(%q, %+v) = %+v, %v; want %+v", c.name, c.o, got, err, c.want)
		}
	}
	shapes, err := ParseReceiverShapes("instant, delay,knee,429", ReceiverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range shapes {
		names = append(names, s.Name())
	}
	if got := strings.Join(names, " "); got != "instant delay-200ms knee-20ms 429-above-8-200ms" {
		t.Errorf("names = %q", got)
	}
}

func TestReceiverShape_KneeLatencyIsStepTimesInFlight(t *testing.T) {
	knee := ReceiverShape{Kind: Knee, Step: 20 * time.Millisecond}
	for k, want := range map[int]time.Duration{1: 20 * time.Millisecond, 2: 40 * time.Millisecond, 8: 160 * time.Millisecond,
		50: time.Second, 10000: maxHold} {
		if got := knee.hold(k); got != want {
			t.Errorf("knee at %d in flight holds %s, want %s", k, got, want)
		}
		if !knee.admits(k) {
			t.Errorf("knee refused at %d in flight", k)
		}
	}
	delayed := ReceiverShape{Kind: Delayed, Delay: 200 * time.Millisecond}
	for _, k := range []int{1, 16, 1000} {
		if got := delayed.hold(k); got != 200*time.Millisecond {
			t.Errorf("delay at %d in flight holds %s, want 200ms at any concurrency", k, got)
		}
	}
	if got := (ReceiverShape{Kind: Instant}).hold(100); got != 0 {
		t.Errorf("instant holds %s", got)
	}
}

func TestReceiverShape_LimitedAdmitsUpToItsLimit(t *testing.T) {
	limited := ReceiverShape{Kind: Limited, Delay: 200 * time.Millisecond, Limit: 8}
	for k := 1; k <= 8; k++ {
		if !limited.admits(k) {
			t.Errorf("refused at %d in flight, within the limit of 8", k)
		}
	}
	for _, k := range []int{9, 10, 100} {
		if limited.admits(k) {
			t.Errorf("admitted at %d in flight, above the limit of 8", k)
		}
	}
}

func TestInFlightMeter_MaxAndTimeWeightedAverage(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var m inFlightMeter
	m.enter(t0)                      // 1 for 1s
	m.enter(t0.Add(time.Second))     // 2 for 1s
	m.leave(t0.Add(2 * time.Second)) // 1 for 1s
	m.leave(t0.Add(3 * time.Second)) // 0
	if m.max != 2 || m.n != 0 || math.Abs(m.average()-4.0/3) > 1e-9 {
		t.Fatalf("max %d, now %d, average %.3f; want 2, 0, 1.333 (4 request-seconds over 3 s)", m.max, m.n, m.average())
	}
	// A phase that begins with a request still held counts it from then.
	m.enter(t0.Add(4 * time.Second))
	m.restart(t0.Add(5 * time.Second))
	m.leave(t0.Add(7 * time.Second))
	if m.max != 1 || m.n != 0 || m.average() != 1 {
		t.Fatalf("after restart: max %d, now %d, average %.3f; want 1, 0, 1", m.max, m.n, m.average())
	}
}

func TestReceiver_CountsRefusalsAfterTheGraceApart(t *testing.T) {
	r := &Receiver{shape: ReceiverShape{Kind: Limited, Delay: time.Second, Limit: 1}}
	r.clear()
	start := r.phaseStart
	for _, at := range []time.Duration{0, time.Second, 4 * time.Second, 6 * time.Second, 9 * time.Second} {
		r.admit(start.Add(at)) // the first is held; the rest are refused
	}
	l := r.Load()
	if l.Requests != 5 || l.Refused != 4 || l.RefusedLate != 2 || l.InFlight != 1 || l.MaxInFlight != 1 {
		t.Fatalf("load %+v; want 5 requests, 4 refused of which 2 after 5s, 1 in flight", l)
	}
}
