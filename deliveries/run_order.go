package deliveries

import (
	"time"

	webhooks "github.com/jobhooks/jobhooks"
)

// Per-run order: a run's job.run.completed or job.run.errored goes to a
// webhook only after the same run's job.run.started has succeeded (or
// failed for good) there, or after it has waited OrderMaxWait. Its parts:
//   - the claims (ClaimShared, ClaimDueDeliveries in db/queries) defer a
//     delivery whose run's started is still pending for its webhook and
//     not in the same page, until the started is due;
//   - orderRuns (here) puts a started before its run's other events in a
//     page, and the round (activities/run_order.go) sends those only
//     after the started's attempt has ended;
//   - RecordAttempts releases a run's deferred events when its started
//     ends, so they are due at once.

// orderMaxWaitMs is the per-run order's bound as the claims take it (0:
// the default hour).
func orderMaxWaitMs(d time.Duration) int64 {
	if d <= 0 {
		d = DefaultOrderMaxWait
	}
	return d.Milliseconds()
}

// DefaultOrderMaxWait bounds how long a delivery waits for an earlier
// event of its run: past the first four retries of the earlier one.
const DefaultOrderMaxWait = time.Hour

// orderRuns moves each run's job.run.started in a page before the first of
// the same run's other events to the same webhook (claimed together, they
// may be due at the same moment): the round sends those after it.
func orderRuns(cs []Claimed) {
	type runKey struct{ webhook, run string }
	first := map[runKey]int{} // the first of a run's other events
	for i := range cs {
		c := cs[i]
		if c.RunID == "" {
			continue
		}
		k := runKey{c.Webhook.ID, c.RunID}
		f, seen := first[k]
		switch {
		case c.EventType != webhooks.EventRunStarted:
			if !seen {
				first[k] = i
			}
		case seen:
			copy(cs[f+1:i+1], cs[f:i])
			cs[f] = c
			for other, at := range first {
				if at >= f && at < i {
					first[other] = at + 1
				}
			}
		}
	}
}
