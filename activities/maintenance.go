package activities

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/jobhooks/jobhooks/deliveries"
)

// Maintenance are the activities of the scheduled maintenance: the
// retention purge, and the sweeper that wakes overdue deliveries and
// follows incidents. Register
// it with the worker; build it with New.
type Maintenance struct {
	store     *deliveries.Store
	waker     Waker
	incidents *incidentFollowUp
	logger    *slog.Logger
	now       func() time.Time
	// overdueGrace is how long a delivery may be overdue before the
	// sweeper wakes whoever takes it.
	overdueGrace time.Duration
}

// PurgeDeliveryRecords applies the retention period: it makes the
// partitions of delivery records and events ahead
// (deliveries.PartitionsAhead), then drops those past retention that hold
// only final deliveries and no event a later redelivery has. No record is
// deleted row by row, so its cost does not depend on how many are kept;
// it also forgets the claims of event ids ingestion made near partition
// starts (a minute's ids around each). It analyzes the partitioned
// tables' parents whose statistics need it (analyzeParents). It
// heartbeats between its steps.
func (mt *Maintenance) PurgeDeliveryRecords(ctx context.Context, retention time.Duration) (deliveries.PurgeResult, error) {
	now := mt.now()
	made, err := mt.store.EnsurePartitions(ctx, now, retention)
	if err != nil {
		return deliveries.PurgeResult{}, err
	}
	heartbeat(ctx, "partitions made")
	dropped, err := mt.store.DropPartitions(ctx, now.Add(-retention))
	if err != nil {
		return deliveries.PurgeResult{}, err
	}
	purged := deliveries.PurgeResult{Partitions: dropped}
	heartbeat(ctx, "partitions dropped")
	if _, err := mt.store.ForgetBoundaryClaims(ctx, now); err != nil {
		return purged, err
	}
	return purged, mt.analyzeParents(ctx, made+dropped > 0)
}

// analyzeParents analyzes the partitioned tables' parents whose
// statistics need it (deliveries.Store.ParentsToAnalyze): never analyzed,
// their rows doubled or halved since, or, when the partitions changed,
// last analyzed over parentsStaleAfter ago. It heartbeats after each.
func (mt *Maintenance) analyzeParents(ctx context.Context, changed bool) error {
	tables, err := mt.store.ParentsToAnalyze(ctx, changed, parentsStaleAfter)
	if err != nil {
		return err
	}
	for _, table := range tables {
		if err := mt.store.AnalyzeParent(ctx, table); err != nil {
			return err
		}
		heartbeat(ctx, "analyzed "+table)
	}
	return nil
}

// parentsStaleAfter is how old a parent's statistics may be when a
// partition is made or dropped: at the default retention partitions change
// once a week, and each change analyzes them as before; at a retention of
// minutes they are analyzed as their rows grow or shrink, and once a day.
const parentsStaleAfter = 24 * time.Hour

// heartbeat records an activity's progress; outside an activity (a direct
// call) it does nothing.
func heartbeat(ctx context.Context, step string) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, step)
	}
}

// WakeOverdueWebhooks wakes whoever takes the deliveries of webhooks with
// a delivery overdue (their shard, or their own lane): their wake-up was
// lost, for example the API stopped between storing an event and waking
// them. It returns how many webhooks it woke.
func (mt *Maintenance) WakeOverdueWebhooks(ctx context.Context) (int, error) {
	overdue, err := mt.store.OverdueWebhooks(ctx, mt.overdueGrace, 1000)
	if err != nil {
		return 0, err
	}
	// Held webhooks whose probe is overdue: their lanes probe.
	probes, err := mt.store.OverdueProbes(ctx, mt.overdueGrace, 1000)
	if err != nil {
		return 0, err
	}
	overdue = append(overdue, probes...)
	// Deliveries left held after their breaker closed: released (due now)
	// to the webhook's route, whose lane or shard is woken.
	stranded, err := mt.store.StrandedHeld(ctx, 1000)
	if err != nil {
		return 0, err
	}
	for _, w := range stranded {
		if _, err := mt.store.ReleaseHeld(ctx, w.SubscriptionID); err != nil {
			return 0, err
		}
		route, err := mt.store.Route(ctx, w.SubscriptionID)
		if err != nil {
			continue // deleted meanwhile
		}
		w.Route = route.Route
		if w.Route != deliveries.RoutePaused {
			overdue = append(overdue, w)
		}
	}
	if len(overdue) == 0 {
		return 0, nil
	}
	mt.logger.InfoContext(ctx, "waking the workflows of overdue deliveries", "webhooks", len(overdue))
	return len(overdue), mt.waker.WakeNow(ctx, overdue)
}

// incidentsPerSweep bounds the incidents one sweep follows; the next
// sweep takes the rest (oldest incident first).
const incidentsPerSweep = 1000

// FollowIncidents takes every incident due a step one step further: an
// open breaker's incident is announced to its account once it is old
// enough, and an incident ends (with its recovery notice) once the
// breaker stayed closed for the quiet period. A webhook whose breaker
// opened on on_outage "retry" stays on its shard, so no lane of its own
// keeps these timers; a lane that does (a held webhook's) takes the same
// steps, and each happens once. It returns how many incidents it followed.
func (mt *Maintenance) FollowIncidents(ctx context.Context) (int, error) {
	return mt.incidents.followDue(ctx, mt.store, incidentsPerSweep)
}
