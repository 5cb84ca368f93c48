package activities

import (
	"context"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// pageOrder keeps per-run order inside a claimed page (a shard's or a
// lane's): a run's job.run.completed or job.run.errored claimed with its
// job.run.started goes only once the started's attempt succeeded (or
// failed for good); otherwise it is not attempted, and is given back with
// what never started (the next claim defers it behind the started).
type pageOrder struct {
	waitsFor map[int]int           // completed index -> its started's index
	ends     map[int]chan struct{} // started index -> closed when its attempt ended
	status   []string              // each started's delivery status after its attempt
}

func newPageOrder(claimed []deliveries.Claimed) *pageOrder {
	o := &pageOrder{waitsFor: map[int]int{}, ends: map[int]chan struct{}{}, status: make([]string, len(claimed))}
	type runKey struct{ webhook, run string }
	started := map[runKey]int{}
	for i, c := range claimed {
		if c.RunID == "" {
			continue
		}
		k := runKey{c.Webhook.ID, c.RunID}
		if c.EventType == webhooks.EventRunStarted {
			if _, ok := started[k]; !ok {
				started[k] = i
			}
			continue
		}
		// Only a started before it in the page: the webhook's workers take
		// its attempts in page order, so the started is never behind it.
		if j, ok := started[k]; ok && j < i {
			o.waitsFor[i] = j
			if o.ends[j] == nil {
				o.ends[j] = make(chan struct{})
			}
		}
	}
	return o
}

// mayGo waits, for an attempt that follows its run's started in the
// page, until the started's attempt ended, and says whether it may go.
func (o *pageOrder) mayGo(ctx context.Context, i int) bool {
	j, ok := o.waitsFor[i]
	if !ok {
		return true
	}
	select {
	case <-o.ends[j]:
	case <-ctx.Done():
		return false
	}
	return o.status[j] == deliveries.StatusSucceeded || o.status[j] == deliveries.StatusFailed
}

// ended notes the end of attempt i ("" when it never started).
func (o *pageOrder) ended(i int, status string) {
	if ch, ok := o.ends[i]; ok {
		o.status[i] = status
		close(ch)
	}
}
