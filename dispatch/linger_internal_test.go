package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// countingStore stores nothing: it answers every event stored and records
// how many events each statement held.
type countingStore struct {
	routingSource
	statements chan int
}

func (s *countingStore) IngestEvents(_ context.Context, events []deliveries.NewEvent) ([]deliveries.IngestResult, []deliveries.RoutedWebhook, error) {
	s.statements <- len(events)
	return make([]deliveries.IngestResult, len(events)), nil, nil
}

// TestCommitter_LingersOnlyUnderAStream: an event that comes to an idle
// committer is stored at once, however long the linger; one that comes
// right after a gather, in a stream whose events come far apart, waits for
// more to share its statement, up to the group's bound, and the other
// flusher, idle beside it, does not take them.
func TestCommitter_LingersOnlyUnderAStream(t *testing.T) {
	store := &countingStore{statements: make(chan int, 10)}
	c := newTestCommitter(store)
	c.linger, c.streamGap, c.maxEvents = time.Hour, time.Hour, 2
	c.pace.meanGap = time.Hour / quietGaps
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go c.flushLoop(ctx)
	go c.flushLoop(ctx)
	f := &committerFixture{}
	submit := func() <-chan error {
		done := make(chan error, 1)
		ev := f.event(1, nil)
		go func() {
			_, _, err := c.submit(ctx, []deliveries.NewEvent{ev}, newGroup(ev).sources)
			done <- err
		}()
		return done
	}

	// Idle: stored alone, without waiting out the hour.
	if err := <-submit(); err != nil {
		t.Fatal(err)
	}
	if n := <-store.statements; n != 1 {
		t.Fatalf("the idle event's statement held %d events, want 1", n)
	}
	// Streaming: the next event waits for another to share its statement.
	second := submit()
	select {
	case err := <-second:
		t.Fatalf("an event right after a flush was stored alone (err %v); want it to wait for another", err)
	case <-time.After(100 * time.Millisecond):
	}
	third := submit()
	for _, done := range []<-chan error{second, third} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := <-store.statements; n != 2 {
		t.Fatalf("the streaming events' statement held %d events, want 2", n)
	}
}

// TestCommitter_QuietStreamEndsTheLinger: in a stream whose events came
// close together, an event with no other after it is stored once the
// stream is quiet, not after the linger (an hour here).
func TestCommitter_QuietStreamEndsTheLinger(t *testing.T) {
	store := &countingStore{statements: make(chan int, 10)}
	c := newTestCommitter(store)
	c.linger, c.streamGap = time.Hour, time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go c.flushLoop(ctx)
	f := &committerFixture{}
	for i := range 2 {
		ev := f.event(1, nil)
		if _, _, err := c.submit(ctx, []deliveries.NewEvent{ev}, newGroup(ev).sources); err != nil {
			t.Fatalf("event %d: %v (the linger was not ended by the quiet stream)", i, err)
		}
		if n := <-store.statements; n != 1 {
			t.Fatalf("event %d's statement held %d events, want 1", i, n)
		}
	}
	if c.pace.meanGap <= 0 {
		t.Fatalf("mean gap %v: the events' gap was not counted", c.pace.meanGap)
	}
}

// TestCommitter_GathersWhatWaitsAndWhatComesInTime: gather takes every
// group waiting beside the first up to the bound, and with a linger also
// those that come before it ends.
func TestCommitter_GathersWhatWaitsAndWhatComesInTime(t *testing.T) {
	f := &committerFixture{}
	group := func(n int) *ingestGroup {
		evs := make([]deliveries.NewEvent, n)
		for i := range evs {
			evs[i] = f.event(1, nil)
		}
		return newGroup(evs...)
	}
	tests := []struct {
		name    string
		waiting []int         // events of the groups already waiting
		later   []int         // events of groups sent while gather runs
		pause   time.Duration // before each later group
		linger  bool
		quiet   time.Duration
		// open: the linger never ends on its own (gather must end it)
		open      bool
		maxEvents int
		want      int // events gathered
	}{
		{name: "alone, no linger", waiting: nil, later: nil, maxEvents: 10, want: 1},
		{name: "waiting groups, no linger", waiting: []int{2, 3}, maxEvents: 10, want: 6},
		{name: "the bound stops it", waiting: []int{5, 5}, maxEvents: 4, want: 6},
		{name: "a linger takes later groups", later: []int{1, 2}, linger: true, maxEvents: 10, want: 4},
		{name: "a linger stops at the bound", later: []int{3, 3, 3}, linger: true, maxEvents: 4, want: 4},
		{name: "a linger ends with enough events", later: []int{lingerEnough - 1}, linger: true, open: true, maxEvents: 500, want: lingerEnough},
		{name: "what waits is taken past enough", waiting: []int{lingerEnough, 1}, linger: true, maxEvents: 500, want: lingerEnough + 2},
		{name: "a stream within quiet is gathered", later: []int{1, 1, 1}, pause: 10 * time.Millisecond, linger: true, quiet: time.Second, maxEvents: 500, want: 4},
		{name: "a quiet stream ends the linger", later: []int{1, 1}, pause: 300 * time.Millisecond, linger: true, open: true, quiet: 100 * time.Millisecond, maxEvents: 500, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCommitter(&countingStore{})
			c.maxEvents = tt.maxEvents
			c.groups = make(chan *ingestGroup, len(tt.waiting))
			for _, n := range tt.waiting {
				c.groups <- group(n)
			}
			until := make(chan time.Time)
			var lingerC <-chan time.Time
			if tt.linger {
				lingerC = until
				go func() {
					for _, n := range tt.later {
						time.Sleep(tt.pause)
						select {
						case c.groups <- group(n):
						case <-time.After(time.Second): // gather took enough
							return
						}
					}
					if tt.open {
						return
					}
					// Taken or not, the linger ends after them.
					select {
					case until <- time.Now():
					case <-time.After(time.Second):
					}
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got := 0
			for _, g := range c.gather(ctx, group(1), lingerC, tt.quiet) {
				got += len(g.events)
			}
			if ctx.Err() != nil {
				t.Fatal("gather waited out the test's context: its linger never ended")
			}
			if got != tt.want {
				t.Fatalf("gathered %d events, want %d", got, tt.want)
			}
		})
	}
}

// TestLingerPace_LingersUnderAStreamUnlessLingersAreWasted: a gatherer
// lingers only when the last gather was recent, and not for lingerOff
// after lingersWasted lingers in a row that gathered no other caller's
// events (a producer that waits for each answer before its next event).
func TestLingerPace_LingersUnderAStreamUnlessLingersAreWasted(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	const linger, gap = 5 * time.Millisecond, 50 * time.Millisecond
	wasted := func(p *lingerPace, n int) time.Time {
		at := t0
		for range n {
			at = at.Add(time.Millisecond)
			p.gathered(at, true, 1)
		}
		return at
	}
	tests := []struct {
		name   string
		before func(p *lingerPace) time.Time // what happened; returns the last gather's end
		after  time.Duration                 // when the event comes after that
		want   bool
	}{
		{name: "idle: never gathered", before: func(*lingerPace) time.Time { return t0 }, after: 0, want: false},
		{name: "a gather just ended", before: func(p *lingerPace) time.Time { p.gathered(t0, false, 1); return t0 }, after: time.Millisecond, want: true},
		{name: "the last gather is past the gap", before: func(p *lingerPace) time.Time { p.gathered(t0, false, 1); return t0 }, after: gap, want: false},
		{name: "a linger gathered others", before: func(p *lingerPace) time.Time { p.gathered(t0, true, 3); return t0 }, after: time.Millisecond, want: true},
		{name: "fewer wasted lingers than the limit", before: func(p *lingerPace) time.Time { return wasted(p, lingersWasted-1) }, after: time.Millisecond, want: true},
		{name: "a paid linger forgives the wasted", before: func(p *lingerPace) time.Time {
			at := wasted(p, lingersWasted-1)
			p.gathered(at, true, 2)
			return wasted(p, lingersWasted-1)
		}, after: time.Millisecond, want: true},
		{name: "enough wasted lingers in a row", before: func(p *lingerPace) time.Time { return wasted(p, lingersWasted) }, after: time.Millisecond, want: false},
		{name: "wasted lingers are forgotten after a while", before: func(p *lingerPace) time.Time {
			at := wasted(p, lingersWasted).Add(lingerOff)
			p.gathered(at, false, 1)
			return at
		}, after: time.Millisecond, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p lingerPace
			at := tt.before(&p).Add(tt.after)
			if got := p.lingers(at, linger, gap); got != tt.want {
				t.Errorf("lingers = %v, want %v", got, tt.want)
			}
			if p.lingers(at, 0, gap) {
				t.Error("lingers with no linger set")
			}
		})
	}
}

// TestLingerPace_QuietFollowsTheStreamsGaps: a lingering gather waits
// quietGaps times the stream's mean gap for the next event, at least
// minQuiet; idle pauses and events handed over out of order do not
// lengthen it.
func TestLingerPace_QuietFollowsTheStreamsGaps(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	const gap = 50 * time.Millisecond
	steady := func(every time.Duration, n int) []time.Duration {
		gaps := make([]time.Duration, n)
		for i := range gaps {
			gaps[i] = every
		}
		return gaps
	}
	tests := []struct {
		name string
		gaps []time.Duration // between arrivals, the first from t0
		want func(time.Duration) bool
		says string
	}{
		{name: "no stream yet", gaps: nil, want: func(q time.Duration) bool { return q == minQuiet }, says: "minQuiet"},
		{name: "one event", gaps: []time.Duration{0}, want: func(q time.Duration) bool { return q == minQuiet }, says: "minQuiet"},
		{name: "the first gaps set the mean at once", gaps: []time.Duration{0, 4 * time.Millisecond}, want: func(q time.Duration) bool { return q == 12*time.Millisecond }, says: "12 ms"},
		{name: "close events: the floor", gaps: steady(10*time.Microsecond, 100), want: func(q time.Duration) bool { return q == minQuiet }, says: "minQuiet"},
		{name: "a steady 4 ms stream", gaps: steady(4*time.Millisecond, 100), want: func(q time.Duration) bool {
			return q > 11*time.Millisecond && q <= 12*time.Millisecond
		}, says: "about 12 ms"},
		{name: "idle pauses are not counted", gaps: append(steady(4*time.Millisecond, 100), time.Minute, gap, 4*time.Millisecond), want: func(q time.Duration) bool {
			return q > 11*time.Millisecond && q <= 12*time.Millisecond
		}, says: "about 12 ms"},
		{name: "a slower stream lengthens it", gaps: steady(10*time.Millisecond, 100), want: func(q time.Duration) bool {
			return q > 29*time.Millisecond && q <= 30*time.Millisecond
		}, says: "about 30 ms"},
		{name: "out of order counts as no gap", gaps: append(steady(4*time.Millisecond, 100), -2*time.Millisecond, -2*time.Millisecond), want: func(q time.Duration) bool {
			return q > 9*time.Millisecond && q <= 9190*time.Microsecond // 3 × 4 ms × (7/8)²
		}, says: "about 9.19 ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p lingerPace
			var latest time.Time // the last arrival must be the latest, not the last handed over
			at := t0
			for _, g := range tt.gaps {
				at = at.Add(g)
				p.arrived(at, gap)
				if at.After(latest) {
					latest = at
				}
			}
			if q := p.quiet(); !tt.want(q) {
				t.Errorf("quiet = %v, want %s (mean gap %v)", q, tt.says, p.meanGap)
			}
			if !p.lastArrival.Equal(latest) {
				t.Errorf("last arrival %v, want the latest %v", p.lastArrival, latest)
			}
		})
	}
}

// TestCommitter_QuietGatherWaitsForOthersAnswers: a lingering gather
// whose stream went quiet goes on waiting while a group it does not hold
// is unanswered (another statement runs, whose caller may send again once
// answered), and ends once it holds every unanswered group.
func TestCommitter_QuietGatherWaitsForOthersAnswers(t *testing.T) {
	c := newTestCommitter(&countingStore{})
	c.groups = make(chan *ingestGroup, 1)
	f := &committerFixture{}
	const quiet = 50 * time.Millisecond
	c.outstanding.Store(2) // the gather's first group, and one in another statement
	go func() {
		time.Sleep(4 * quiet)
		c.outstanding.Add(1) // the other caller, answered, sends again...
		c.groups <- newGroup(f.event(1, nil))
		c.outstanding.Add(-1) // ...and its earlier group is answered
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	batch := c.gather(ctx, newGroup(f.event(1, nil)), make(chan time.Time), quiet)
	if len(batch) != 2 {
		t.Fatalf("gathered %d groups after %v, want 2: the first, and the other caller's next", len(batch), time.Since(start))
	}
	if ctx.Err() != nil {
		t.Fatal("gather waited out the test's context: it did not end once it held every unanswered group")
	}
}
