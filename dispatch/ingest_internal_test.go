package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// recordingStore passes statements to a real store, recording how many
// events each held; fail, when set, refuses a statement before it runs.
type recordingStore struct {
	eventStore
	fail func(events []deliveries.NewEvent) error
	mu   sync.Mutex
	runs []int
}

func (s *recordingStore) IngestEvents(ctx context.Context, events []deliveries.NewEvent) ([]deliveries.IngestResult, []deliveries.RoutedWebhook, error) {
	s.mu.Lock()
	s.runs = append(s.runs, len(events))
	s.mu.Unlock()
	if s.fail != nil {
		if err := s.fail(events); err != nil {
			return nil, nil, err
		}
	}
	return s.eventStore.IngestEvents(ctx, events)
}

func (s *recordingStore) statements() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.runs)
}

func newTestCommitter(store eventStore) *committer {
	return &committer{store: store, routing: newRoutingCache(slog.New(slog.DiscardHandler)),
		waker:  NewWaker(nil, "default", "webhooks", 8, slog.New(slog.DiscardHandler)),
		groups: make(chan *ingestGroup), maxEvents: 500, timeout: 10 * time.Second}
}

// committerFixture is a migrated database with two accounts.
type committerFixture struct {
	pool *pgxpool.Pool
	a, b int64
	seq  atomic.Int64 // events are made from several goroutines
}

func newCommitterFixture(t *testing.T) *committerFixture {
	t.Helper()
	d := testenv.NewDatabase(t)
	ids := identity.NewStore(d.Pool)
	f := &committerFixture{pool: d.Pool}
	for name, id := range map[string]*int64{"account-a": &f.a, "account-b": &f.b} {
		acct, err := ids.CreateAccount(context.Background(), name, webhooks.PlanTeam)
		if err != nil {
			t.Fatal(err)
		}
		*id = acct.ID
	}
	return f
}

// event returns a new storable event of account; poison, when set,
// changes it before it is returned.
func (f *committerFixture) event(account int64, poison func(*deliveries.NewEvent)) deliveries.NewEvent {
	seq := f.seq.Add(1)
	ev := deliveries.NewEvent{ID: EventIDFor(account, fmt.Sprintf("ev-%d", seq)), AccountID: account,
		Type: webhooks.EventRunStarted, JobID: "4", RunID: fmt.Sprint(seq), ToolName: "dbt"}
	if poison != nil {
		poison(&ev)
	}
	return ev
}

func (f *committerFixture) stored(t *testing.T, id string) bool {
	t.Helper()
	var ok bool
	if err := f.pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM webhook_events WHERE id = $1)", id).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func newGroup(events ...deliveries.NewEvent) *ingestGroup {
	sources := make([]webhooks.Event, len(events))
	for i, ev := range events {
		sources[i] = webhooks.Event{ID: ev.ID, AccountID: ev.AccountID, Type: ev.Type,
			Data: webhooks.RunData{JobID: ev.JobID, RunID: ev.RunID}}
	}
	return &ingestGroup{events: events, sources: sources, done: make(chan struct{}), arrived: time.Now()}
}

var (
	nulJobID     = func(ev *deliveries.NewEvent) { ev.JobID = "4\x002" }
	invalidRunID = func(ev *deliveries.NewEvent) { ev.RunID = "7\xff" }
	nulEventType = func(ev *deliveries.NewEvent) { ev.Type = "job.run.started\x00" }
)

// TestCommitter_RefusedEventFailsOnlyItself: a group commit whose
// statement PostgreSQL refuses for one event's text (a NUL, invalid UTF-8:
// data exceptions, class 22) stores every other event of every caller,
// and refuses only the events at fault, each as an invalid input, never as
// an outage.
func TestCommitter_RefusedEventFailsOnlyItself(t *testing.T) {
	f := newCommitterFixture(t)
	store := &recordingStore{eventStore: deliveries.NewStore(f.pool)}
	c := newTestCommitter(store)
	groups := []*ingestGroup{
		newGroup(f.event(f.a, nil), f.event(f.a, nil), f.event(f.a, nil)),
		newGroup(f.event(f.b, nulJobID)),
		newGroup(f.event(f.a, nil), f.event(f.a, invalidRunID), f.event(f.a, nil), f.event(f.a, nulEventType), f.event(f.a, nil)),
		newGroup(f.event(f.b, nil)),
	}
	bad := map[string]bool{groups[1].events[0].ID: true, groups[2].events[1].ID: true, groups[2].events[3].ID: true}
	c.flush(groups)

	for gi, g := range groups {
		if g.err != nil {
			t.Fatalf("group %d failed as a whole: %v", gi, g.err)
		}
		for i, ev := range g.events {
			var refused error
			if g.refused != nil {
				refused = g.refused[i]
			}
			if bad[ev.ID] {
				if webhooks.ErrorCode(refused) != webhooks.EINVALID || webhooks.ErrorMessage(refused) == "" {
					t.Errorf("group %d event %d: refused = %v, want an invalid-input error", gi, i, refused)
				}
				if f.stored(t, ev.ID) {
					t.Errorf("group %d event %d at fault was stored", gi, i)
				}
				continue
			}
			if refused != nil || !g.results[i].AccountKnown || !g.results[i].Stored {
				t.Errorf("group %d event %d: result %+v, refused %v; want stored", gi, i, g.results[i], refused)
			}
			if !f.stored(t, ev.ID) {
				t.Errorf("group %d event %d is not in the database", gi, i)
			}
		}
	}
	runs := store.statements()
	if len(runs) < 2 || runs[0] != 10 {
		t.Errorf("statements held %v events, want one of all 10 and then the split", runs)
	}
	select {
	case <-groups[0].done:
	default:
		t.Error("a group was not answered")
	}
}

// TestCommitter_SplitsOnAnyNonOutageError: whatever refuses a statement
// other than an outage, the group commit is split until the event at fault
// is alone; the others are stored, and the culprit's answer depends on the
// error: a data exception is the event's fault (400), a serialization
// failure may pass again (503), anything else is a defect (500).
func TestCommitter_SplitsOnAnyNonOutageError(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode string
	}{
		{"DataException", &pgconn.PgError{Code: "22P05", Message: "unsupported Unicode escape sequence"}, webhooks.EINVALID},
		{"DeadlockDetected", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}, webhooks.EUNAVAILABLE},
		{"UndefinedColumn", &pgconn.PgError{Code: "42703", Message: "column does not exist"}, webhooks.EINTERNAL},
		{"NotFromTheServer", errors.New("unable to encode"), webhooks.EINTERNAL},
	}
	f := newCommitterFixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			culprit := f.event(f.b, nil)
			store := &recordingStore{eventStore: deliveries.NewStore(f.pool), fail: func(events []deliveries.NewEvent) error {
				if slices.ContainsFunc(events, func(ev deliveries.NewEvent) bool { return ev.ID == culprit.ID }) {
					return fmt.Errorf("store %d events: %w", len(events), tt.err)
				}
				return nil
			}}
			var groups []*ingestGroup
			for range 6 {
				groups = append(groups, newGroup(f.event(f.a, nil)))
			}
			groups = append(groups, newGroup(f.event(f.b, nil), culprit, f.event(f.b, nil)))
			for range 5 {
				groups = append(groups, newGroup(f.event(f.a, nil), f.event(f.a, nil)))
			}
			newTestCommitter(store).flush(groups)
			for gi, g := range groups {
				if g.err != nil {
					t.Fatalf("group %d failed as a whole: %v", gi, g.err)
				}
				for i, ev := range g.events {
					if ev.ID == culprit.ID {
						if g.refused == nil || webhooks.ErrorCode(g.refused[i]) != tt.wantCode {
							t.Errorf("culprit refused with %v, want code %s", g.refused, tt.wantCode)
						}
						continue
					}
					if (g.refused != nil && g.refused[i] != nil) || !g.results[i].Stored || !f.stored(t, ev.ID) {
						t.Errorf("group %d event %d not stored: %+v", gi, i, g.results[i])
					}
				}
			}
			// 19 events: halving down to the culprit takes a statement per
			// level on each side, far fewer than one per event.
			if runs := store.statements(); len(runs) > 12 {
				t.Errorf("%d statements (%v) to find one culprit among 19 events", len(runs), runs)
			}
		})
	}
}

// TestCommitter_OutageFailsEveryGroupAtOnce: a database that cannot serve
// fails every group of the commit, once, with an error the API answers as
// 503; it is not split into more statements.
func TestCommitter_OutageFailsEveryGroupAtOnce(t *testing.T) {
	f := newCommitterFixture(t)
	closed, err := pgxpool.New(context.Background(), f.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	store := &recordingStore{eventStore: deliveries.NewStore(closed)}
	groups := []*ingestGroup{newGroup(f.event(f.a, nil)), newGroup(f.event(f.b, nulJobID)), newGroup(f.event(f.a, nil), f.event(f.a, nil))}
	newTestCommitter(store).flush(groups)
	for gi, g := range groups {
		if !db.Unavailable(g.err) || g.refused != nil {
			t.Errorf("group %d: err %v, refused %v; want the outage for the whole group", gi, g.err, g.refused)
		}
	}
	if runs := store.statements(); len(runs) != 1 {
		t.Errorf("statements %v, want the one that met the outage", runs)
	}
}

// TestIngest_RefusedEventAnswersItsCallerOnly: through the service, an
// event the database refuses comes back as that event's own invalid-input
// result; the other events of the call are stored, and a concurrent
// caller's events are not touched.
func TestIngest_RefusedEventAnswersItsCallerOnly(t *testing.T) {
	f := newCommitterFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := NewService(ctx, nil, deliveries.NewStore(f.pool), slog.New(slog.DiscardHandler), Options{})
	run := webhooks.RunData{JobID: "4", RunID: "2", RunStartedAt: "2026-01-02T03:04:05Z"}
	poison := run
	poison.JobID = "4\x002" // past NewEvent's checks, as a caller that skips them would send it
	events := []webhooks.Event{
		{ID: EventIDFor(f.b, "x-1"), AccountID: f.b, Type: webhooks.EventRunStarted, Data: run},
		{ID: EventIDFor(f.b, "x-2"), AccountID: f.b, Type: webhooks.EventRunStarted, Data: poison},
	}
	var wg sync.WaitGroup
	var other []IngestResult
	var otherErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		other, otherErr = s.Ingest(ctx, []webhooks.Event{{ID: EventIDFor(f.a, "y-1"), AccountID: f.a, Type: webhooks.EventRunStarted, Data: run}})
	}()
	got, err := s.Ingest(ctx, events)
	wg.Wait()
	if err != nil || otherErr != nil {
		t.Fatalf("Ingest failed as a whole: %v, %v", err, otherErr)
	}
	if got[0].Err != nil || !f.stored(t, events[0].ID) {
		t.Errorf("good event: %+v, want stored", got[0])
	}
	if webhooks.ErrorCode(got[1].Err) != webhooks.EINVALID || f.stored(t, events[1].ID) {
		t.Errorf("refused event: %+v, want an invalid-input error and nothing stored", got[1])
	}
	if len(other) != 1 || other[0].Err != nil || !f.stored(t, other[0].EventID) {
		t.Errorf("other caller: %+v, want stored", other)
	}
}
