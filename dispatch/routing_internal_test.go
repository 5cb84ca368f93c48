package dispatch

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// routingFixture is a migrated database with an account, the stores that
// set webhooks and their delivery settings, and committers (each one a
// process's) that ingest on it as the API does.
type routingFixture struct {
	pool     *pgxpool.Pool
	account  int64
	subs     *subscriptions.Store
	settings *webhooksettings.Store
	runs     int
	start    time.Time
}

func newRoutingFixture(t *testing.T) *routingFixture {
	t.Helper()
	d := testenv.NewDatabase(t)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: raw}})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := identity.NewStore(d.Pool).CreateAccount(t.Context(), "routing", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	return &routingFixture{pool: d.Pool, account: acct.ID, subs: subscriptions.NewStore(d.Pool, box),
		settings: webhooksettings.NewStore(d.Pool, box), start: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
}

// committer starts a committer (a process of its own, with its own filter
// cache) that runs until the test ends.
func (f *routingFixture) committer(t *testing.T) *committer {
	t.Helper()
	c := newTestCommitter(deliveries.NewStore(f.pool))
	c.waker = NewWaker(nopTemporal{}, "default", "webhooks", 8, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for range 2 {
		go c.flushLoop(ctx)
	}
	return c
}

// nopTemporal accepts every wake-up and does nothing: these tests read
// the deliveries ingestion made, nobody takes them.
type nopTemporal struct{ client.Client }

func (nopTemporal) SignalWithStartWorkflow(context.Context, string, string, any, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return nil, nil
}

func (f *routingFixture) webhook(t *testing.T, jobIDs []int64, u webhooksettings.Update) string {
	t.Helper()
	sub, _, err := f.subs.Create(t.Context(), webhooks.Subscription{AccountID: f.account, Name: "hook",
		ClientURL: "https://hooks.example.com/", EventTypes: webhooks.EventTypes, JobIDs: jobIDs, Active: true})
	if err != nil {
		t.Fatal(err)
	}
	f.set(t, sub.ID, u)
	return sub.ID
}

func (f *routingFixture) set(t *testing.T, webhookID string, u webhooksettings.Update) {
	t.Helper()
	if err := u.Problems(time.Now()).Err(); err != nil {
		t.Fatalf("settings %+v: %v", u, err)
	}
	if _, err := f.settings.Update(t.Context(), f.account, webhookID, u, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// outcome is one event of a run of job: its type and its place in time
// (minutes after the fixture's start).
type outcome struct {
	job, run  string
	eventType string
	minute    int
	env       string
}

func (f *routingFixture) event(o outcome) webhooks.Event {
	f.runs++
	at := f.start.Add(time.Duration(o.minute) * time.Minute).Format(webhooks.RunTimeFormat)
	env := o.env
	if env == "" {
		env = "Prod"
	}
	d := webhooks.RunData{JobID: o.job, RunID: o.run, JobName: "nightly", EnvironmentName: env, ProjectName: "p",
		RunStatus: "Success", RunStartedAt: at, RunReason: "scheduled"}
	switch o.eventType {
	case webhooks.EventRunCompleted:
		d.RunFinishedAt = at
	case webhooks.EventRunErrored:
		d.RunStatus, d.RunErroredAt = "Error", at
	}
	return webhooks.Event{ID: fmt.Sprintf("wev_routing%d_%d", f.account, f.runs), AccountID: f.account, Type: o.eventType, Data: d}
}

// ingest submits the outcomes through c, as one caller's group.
func (f *routingFixture) ingest(t *testing.T, c *committer, outcomes ...outcome) {
	t.Helper()
	events := make([]webhooks.Event, len(outcomes))
	for i, o := range outcomes {
		events[i] = f.event(o)
	}
	rows := eventRows(events, "dbt", "")
	res, refused, err := c.submit(t.Context(), rows, events)
	if err != nil || refused != nil {
		t.Fatalf("ingest: %v %v", err, refused)
	}
	for i, r := range res {
		if !r.Stored {
			t.Fatalf("event %d not stored: %+v", i, r)
		}
	}
}

// delivered lists the webhook's deliveries in sequence order, as
// "<event type> run <run id>".
func (f *routingFixture) delivered(t *testing.T, webhookID string) []string {
	t.Helper()
	rows, err := f.pool.Query(t.Context(), `
		SELECT event_type || ' run ' || run_id FROM webhook_deliveries WHERE subscription_id = $1 ORDER BY sequence`, webhookID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type jobState struct {
	failing bool
	since   *time.Time
	run     string
}

func (f *routingFixture) state(t *testing.T, webhookID, job string) (jobState, bool) {
	t.Helper()
	var s jobState
	err := f.pool.QueryRow(t.Context(), `
		SELECT failing, failing_since, outcome_run_id FROM webhook_job_states WHERE subscription_id = $1 AND job_id = $2`,
		webhookID, job).Scan(&s.failing, &s.since, &s.run)
	if err == pgx.ErrNoRows {
		return s, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return s, true
}

func ptr[T any](v T) *T { return &v }

const (
	started   = webhooks.EventRunStarted
	completed = webhooks.EventRunCompleted
	errored   = webhooks.EventRunErrored
)

// run is a run's started and outcome, a minute apart.
func run(job, id string, minute int, end string) []outcome {
	return []outcome{{job: job, run: id, eventType: started, minute: minute}, {job: job, run: id, eventType: end, minute: minute + 1}}
}

func runs(rs ...[]outcome) []outcome { return slices.Concat(rs...) }

// TestIngest_StateChange: what a webhook following states gets of a
// job's runs, ingested one caller at a time, against a webhook that gets
// every event.
func TestIngest_StateChange(t *testing.T) {
	stateChange := webhooksettings.Update{NotifyOn: ptr(webhooksettings.NotifyStateChange)}
	pagerDuty := webhooksettings.Update{Format: ptr(webhooksettings.FormatPagerDuty),
		NotifyOn: ptr(webhooksettings.NotifyEvery), PagerDutyRoutingKey: ptr("R0UT1NGKEY0123456789012345678901")}
	failThriceThenRecover := runs(run("42", "1", 0, errored), run("42", "2", 10, errored), run("42", "3", 20, errored),
		run("42", "4", 30, completed))
	for _, tc := range []struct {
		name     string
		settings webhooksettings.Update
		calls    [][]outcome // one ingestion each
		want     []string
		failing  *bool
		since    int // minute of failing_since, when failing
	}{
		{"errored thrice then completed: trigger and resolve", stateChange, [][]outcome{failThriceThenRecover},
			[]string{"job.run.errored run 1", "job.run.completed run 4"}, ptr(false), 0},
		{"the same, one event per ingestion", stateChange, splitEach(failThriceThenRecover),
			[]string{"job.run.errored run 1", "job.run.completed run 4"}, ptr(false), 0},
		{"pagerduty behaves so whatever notify_on says", pagerDuty, splitEach(failThriceThenRecover),
			[]string{"job.run.errored run 1", "job.run.completed run 4"}, ptr(false), 0},
		{"started never, a success first is no recovery", stateChange,
			[][]outcome{run("42", "1", 0, completed), run("42", "2", 10, completed)}, nil, ptr(false), 0},
		{"still failing: failing since the first failure", stateChange,
			splitEach(runs(run("42", "1", 0, completed), run("42", "2", 10, errored), run("42", "3", 20, errored))),
			[]string{"job.run.errored run 2"}, ptr(true), 11},
		{"an older run arriving later changes nothing", stateChange, [][]outcome{
			run("42", "2", 10, errored), run("42", "1", 0, completed), run("42", "3", 20, completed),
			run("42", "0", -10, errored)},
			[]string{"job.run.errored run 2", "job.run.completed run 3"}, ptr(false), 0},
		{"out of order within one group follows the runs' order", stateChange, [][]outcome{runs(
			run("42", "3", 20, errored), run("42", "1", 0, errored), run("42", "2", 10, completed), run("42", "4", 30, errored))},
			// run 1 fails, run 2 recovers, run 3 fails, run 4 still fails:
			// each flip once, numbered in the group's event order.
			[]string{"job.run.errored run 3", "job.run.errored run 1", "job.run.completed run 2"}, ptr(true), 21},
		{"same time: the larger run id is the newer", stateChange, [][]outcome{
			{{job: "42", run: "10", eventType: errored, minute: 5}}, {{job: "42", run: "9", eventType: completed, minute: 5}}},
			[]string{"job.run.errored run 10"}, ptr(true), 5},
		{"jobs apart", stateChange, [][]outcome{runs(run("42", "1", 0, errored), run("43", "1", 0, errored),
			run("42", "2", 10, completed))},
			[]string{"job.run.errored run 1", "job.run.errored run 1", "job.run.completed run 2"}, ptr(false), 0},
		{"notify_on every: every event, no state", webhooksettings.Update{NotifyOn: ptr(webhooksettings.NotifyEvery)},
			[][]outcome{runs(run("42", "1", 0, errored), run("42", "2", 10, errored))},
			[]string{"job.run.started run 1", "job.run.errored run 1", "job.run.started run 2", "job.run.errored run 2"}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRoutingFixture(t)
			c := f.committer(t)
			hook := f.webhook(t, nil, tc.settings)
			every := f.webhook(t, nil, webhooksettings.Update{})
			n := 0
			for _, call := range tc.calls {
				f.ingest(t, c, call...)
				n += len(call)
			}
			if got := f.delivered(t, hook); !slices.Equal(got, tc.want) {
				t.Errorf("delivered %q, want %q", got, tc.want)
			}
			if got := f.delivered(t, every); len(got) != n {
				t.Errorf("the webhook of every event got %d deliveries, want %d", len(got), n)
			}
			st, ok := f.state(t, hook, "42")
			switch {
			case tc.failing == nil && ok:
				t.Errorf("state %+v kept for a webhook of every event", st)
			case tc.failing != nil && (!ok || st.failing != *tc.failing):
				t.Errorf("state %+v (stored %v), want failing %v", st, ok, *tc.failing)
			case tc.failing != nil && *tc.failing &&
				(st.since == nil || !st.since.Equal(f.start.Add(time.Duration(tc.since)*time.Minute))):
				t.Errorf("failing since %v, want minute %d", st.since, tc.since)
			}
		})
	}
}

// runOf is the run of a delivery as delivered lists it.
func runOf(t *testing.T, delivered string) int {
	t.Helper()
	var typ string
	var r int
	if _, err := fmt.Sscanf(delivered, "%s run %d", &typ, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func splitEach(os []outcome) [][]outcome {
	out := make([][]outcome, len(os))
	for i, o := range os {
		out[i] = []outcome{o}
	}
	return out
}

// TestIngest_StateChangeUnderConcurrentRuns: 20 runs of one job ingested
// at once by four processes: the deliveries, in the runs' order,
// alternate, one per flip of the state, and the state ends at the newest
// run. (Numbers follow commits, and a group's event order within one.)
func TestIngest_StateChangeUnderConcurrentRuns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome func(run int) string
		want    int // deliveries, when known whatever the order
	}{
		{"all fail: one trigger", func(int) string { return errored }, 1},
		{"mixed, the newest failing", func(r int) string {
			if r%3 == 0 {
				return completed
			}
			return errored
		}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRoutingFixture(t)
			hook := f.webhook(t, []int64{7}, webhooksettings.Update{NotifyOn: ptr(webhooksettings.NotifyStateChange)})
			committers := []*committer{f.committer(t), f.committer(t), f.committer(t), f.committer(t)}
			var wg sync.WaitGroup
			for r := 1; r <= 20; r++ {
				o := outcome{job: "7", run: fmt.Sprint(r), eventType: tc.outcome(r), minute: r}
				ev := f.event(o)
				wg.Go(func() {
					rows := eventRows([]webhooks.Event{ev}, "dbt", "")
					_, _, err := committers[r%4].submit(context.Background(), rows, []webhooks.Event{ev})
					if err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			got := f.delivered(t, hook)
			slices.SortFunc(got, func(a, b string) int { return runOf(t, a) - runOf(t, b) })
			t.Logf("delivered, in run order: %q", got)
			if tc.want >= 0 && len(got) != tc.want {
				t.Errorf("delivered %q, want %d", got, tc.want)
			}
			// The newest run failed: the state ends failing, so a first
			// failure was delivered, whatever order the runs came in.
			if len(got) == 0 || got[0][:len(errored)] != errored {
				t.Fatalf("delivered %q, want a first failure first", got)
			}
			last := 0
			for i, d := range got {
				var typ string
				var r int
				if _, err := fmt.Sscanf(d, "%s run %d", &typ, &r); err != nil {
					t.Fatal(err)
				}
				if want := []string{errored, completed}[i%2]; typ != want {
					t.Errorf("delivery %d is %s, want %s (one per flip): %q", i, typ, want, got)
				}
				if r <= last {
					t.Errorf("delivery %d is of run %d, after run %d: %q", i, r, last, got)
				}
				last = r
			}
			st, _ := f.state(t, hook, "7")
			if st.run != "20" || st.failing != (tc.outcome(20) == errored) {
				t.Errorf("state %+v, want run 20's", st)
			}
			if wantFailing := got[len(got)-1][:len(errored)] == errored; st.failing != wantFailing {
				t.Errorf("state failing %v, but the last delivery is %s", st.failing, got[len(got)-1])
			}
		})
	}
}

// TestIngest_Filter: a webhook's filter decides which events it gets;
// another webhook of the account gets them all.
func TestIngest_Filter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter string
		events []outcome
		want   []string
	}{
		{"rejects", `data.environmentName == "Prod" && eventType == "job.run.errored"`,
			[]outcome{{job: "1", run: "1", eventType: errored, env: "Staging"}, {job: "1", run: "2", eventType: completed}},
			nil},
		{"accepts", `data.environmentName == "Prod" && eventType == "job.run.errored"`,
			[]outcome{{job: "1", run: "1", eventType: errored, env: "Staging"}, {job: "1", run: "2", eventType: errored}},
			[]string{"job.run.errored run 2"}},
		{"a filter that fails on an event lets it through", `int(data.runReason) > 3`,
			[]outcome{{job: "1", run: "1", eventType: errored}}, []string{"job.run.errored run 1"}},
		{"the webhook's name and id", `webhookName == "hook" && webhooksID.startsWith("wsu_")`,
			[]outcome{{job: "1", run: "1", eventType: errored}}, []string{"job.run.errored run 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRoutingFixture(t)
			c := f.committer(t)
			hook := f.webhook(t, nil, webhooksettings.Update{Filter: &webhooksettings.FilterInput{Expr: ptr(tc.filter)}})
			every := f.webhook(t, nil, webhooksettings.Update{})
			for _, o := range tc.events {
				f.ingest(t, c, o)
			}
			if got := f.delivered(t, hook); !slices.Equal(got, tc.want) {
				t.Errorf("delivered %q, want %q", got, tc.want)
			}
			if got := f.delivered(t, every); len(got) != len(tc.events) {
				t.Errorf("the webhook without a filter got %d deliveries, want %d", len(got), len(tc.events))
			}
		})
	}
}

// TestIngest_FilterChangesApplyAtOnce: a process that judged an account's
// events with its filters sees each change at the next ingestion: a
// filter set, changed, a filtered webhook's jobs changed, the filter
// removed; another process sees them as well.
func TestIngest_FilterChangesApplyAtOnce(t *testing.T) {
	f := newRoutingFixture(t)
	a, b := f.committer(t), f.committer(t)
	hook := f.webhook(t, []int64{1}, webhooksettings.Update{})
	ev := func(job string, env string) outcome {
		return outcome{job: job, run: "1", eventType: completed, env: env}
	}
	steps := []struct {
		change func()
		c      *committer
		event  outcome
		want   int // deliveries after it
	}{
		{func() {}, a, ev("1", "Staging"), 1},
		{func() {
			f.set(t, hook, webhooksettings.Update{Filter: &webhooksettings.FilterInput{Expr: ptr(`data.environmentName == "Prod"`)}})
		}, a, ev("1", "Staging"), 1},
		{func() {}, b, ev("1", "Prod"), 2},
		{func() {
			f.set(t, hook, webhooksettings.Update{Filter: &webhooksettings.FilterInput{Expr: ptr(`data.environmentName == "Staging"`)}})
		}, a, ev("1", "Staging"), 3},
		{func() {
			if _, err := f.subs.Update(t.Context(), f.account, hook, webhooks.SubscriptionUpdate{JobIDs: &[]int64{2}}); err != nil {
				t.Fatal(err)
			}
		}, a, ev("2", "Prod"), 3},
		{func() {
			f.set(t, hook, webhooksettings.Update{Filter: &webhooksettings.FilterInput{}})
		}, b, ev("2", "Prod"), 4},
	}
	for i, s := range steps {
		s.change()
		f.ingest(t, s.c, s.event)
		if got := f.delivered(t, hook); len(got) != s.want {
			t.Fatalf("step %d: %d deliveries, want %d", i, len(got), s.want)
		}
	}
}

// TestIngest_AccountWithoutRouting: an account whose webhooks have
// neither filters nor state change gets every event, keeps no state and is
// never asked to read filters.
func TestIngest_AccountWithoutRouting(t *testing.T) {
	f := newRoutingFixture(t)
	c := f.committer(t)
	hook := f.webhook(t, nil, webhooksettings.Update{})
	f.ingest(t, c, runs(run("1", "1", 0, errored), run("1", "2", 10, errored), run("1", "3", 20, completed))...)
	if got := f.delivered(t, hook); len(got) != 6 {
		t.Errorf("delivered %q, want all 6 events", got)
	}
	var states, versions int
	if err := f.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM webhook_job_states), (SELECT count(*) FROM webhook_routing_versions)`).
		Scan(&states, &versions); err != nil {
		t.Fatal(err)
	}
	if states != 0 || versions != 0 {
		t.Errorf("%d job states, %d routing versions, want none", states, versions)
	}
	c.routing.mu.RLock()
	defer c.routing.mu.RUnlock()
	if len(c.routing.accounts) != 0 {
		t.Errorf("the process read the filters of %d accounts, want none", len(c.routing.accounts))
	}
}

// TestIngest_StateChangeAppliesAtOnce: an account without routing is
// stored by the statement that leaves routing out, and a process that
// stored its events so sees a webhook start following states at its next
// ingestion, as does another process; once no webhook of the account
// follows states (one stops, the other is deleted), its events are
// stored without routing again.
func TestIngest_StateChangeAppliesAtOnce(t *testing.T) {
	f := newRoutingFixture(t)
	a, b := f.committer(t), f.committer(t)
	hook := f.webhook(t, nil, webhooksettings.Update{})
	var other string
	routed := func(c *committer) bool {
		c.routing.mu.RLock()
		defer c.routing.mu.RUnlock()
		acc := c.routing.accounts[f.account]
		return acc != nil && acc.routed
	}
	// A completed outcome of a job never seen is sent to a webhook
	// notified of every event, never to one following states.
	steps := []struct {
		name   string
		change func()
		c      *committer
		want   int // deliveries to hook after it
		routed bool
	}{
		{"no routing", func() {}, a, 1, false},
		{"the webhook follows states", func() {
			f.set(t, hook, webhooksettings.Update{NotifyOn: ptr(webhooksettings.NotifyStateChange)})
		}, a, 1, true},
		{"another process", func() {}, b, 1, true},
		{"a second webhook follows states as PagerDuty", func() {
			other = f.webhook(t, nil, webhooksettings.Update{Format: ptr(webhooksettings.FormatPagerDuty),
				PagerDutyRoutingKey: ptr("R0UT1NGKEY0123456789012345678901")})
			f.set(t, hook, webhooksettings.Update{NotifyOn: ptr(webhooksettings.NotifyEvery)})
		}, a, 2, true},
		{"the PagerDuty webhook is deleted", func() {
			if err := f.subs.Delete(t.Context(), f.account, other); err != nil {
				t.Fatal(err)
			}
		}, a, 3, false},
		{"another process, after", func() {}, b, 4, false},
	}
	for _, s := range steps {
		s.change()
		f.ingest(t, s.c, outcome{job: "1", run: strconv.Itoa(f.runs + 1), eventType: completed, minute: f.runs})
		if got := f.delivered(t, hook); len(got) != s.want {
			t.Fatalf("%s: %d deliveries %q, want %d", s.name, len(got), got, s.want)
		}
		if got := routed(s.c); got != s.routed {
			t.Errorf("%s: the process holds the account as routed %v, want %v", s.name, got, s.routed)
		}
	}
}

// TestIngest_LeavingStateChangeForgetsStates: a webhook that stops
// following states forgets them; following them again, its jobs start as
// not failing.
func TestIngest_LeavingStateChangeForgetsStates(t *testing.T) {
	f := newRoutingFixture(t)
	c := f.committer(t)
	hook := f.webhook(t, nil, webhooksettings.Update{NotifyOn: ptr(webhooksettings.NotifyStateChange)})
	f.ingest(t, c, outcome{job: "1", run: "1", eventType: errored, minute: 1})
	if st, ok := f.state(t, hook, "1"); !ok || !st.failing {
		t.Fatalf("state %+v %v, want failing", st, ok)
	}
	f.set(t, hook, webhooksettings.Update{NotifyOn: ptr(webhooksettings.NotifyEvery)})
	if st, ok := f.state(t, hook, "1"); ok {
		t.Fatalf("state %+v kept after leaving state change", st)
	}
	var flag bool
	if err := f.pool.QueryRow(t.Context(), `SELECT notify_state_change FROM webhook_subscriptions WHERE id = $1`, hook).Scan(&flag); err != nil || flag {
		t.Fatalf("notify_state_change %v (%v), want false", flag, err)
	}
	f.set(t, hook, webhooksettings.Update{NotifyOn: ptr(webhooksettings.NotifyStateChange)})
	f.ingest(t, c, outcome{job: "1", run: "2", eventType: errored, minute: 2})
	if got := f.delivered(t, hook); !slices.Equal(got, []string{"job.run.errored run 1", "job.run.errored run 2"}) {
		t.Errorf("delivered %q", got)
	}
}

// TestIngest_InactiveWebhookFollowsStates: an inactive webhook that
// follows states keeps following them; the flips it would have been sent
// are recorded skipped, and once active again it is sent the next flip.
func TestIngest_InactiveWebhookFollowsStates(t *testing.T) {
	f := newRoutingFixture(t)
	c := f.committer(t)
	hook := f.webhook(t, nil, webhooksettings.Update{NotifyOn: ptr(webhooksettings.NotifyStateChange)})
	active := func(on bool) {
		t.Helper()
		if _, err := f.subs.Update(t.Context(), f.account, hook, webhooks.SubscriptionUpdate{Active: &on}); err != nil {
			t.Fatal(err)
		}
	}
	active(false)
	f.ingest(t, c, runs(run("1", "1", 0, errored), run("1", "2", 10, errored))...)
	active(true)
	f.ingest(t, c, run("1", "3", 20, completed)...)
	rows, err := f.pool.Query(t.Context(), `
		SELECT event_type || ' run ' || run_id || ' ' || status FROM webhook_deliveries WHERE subscription_id = $1 ORDER BY sequence`, hook)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"job.run.errored run 1 skipped", "job.run.completed run 3 pending"}
	if !slices.Equal(got, want) {
		t.Errorf("deliveries %q, want %q", got, want)
	}
}
