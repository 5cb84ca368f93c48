package workflows

import (
	"cmp"
	"slices"
	"time"

	"github.com/jobhooks/jobhooks/activities"
)

// learnedLimitsFor is how long a shard carries a limit after the last
// round that reported it: as long as a worker keeps an idle webhook's or
// destination's limit (inflight.Options.IdleTTL's default).
const learnedLimitsFor = 10 * time.Minute

// maxLearnedLimits bounds how many webhooks and how many destinations a
// shard carries, the most recently reported first: they are in every
// round's input (in the history when rounds run on any worker: up to
// about 15 KB a round, and the server suggests continuing as new as the
// history grows) and in the input of the shard's next run.
const maxLearnedLimits = 128

// learnedLimits are the in-flight limits a shard's rounds reported, by
// webhook and by destination, each with when it was last reported: what
// the next round starts from on a worker that does not hold them
// (activities.LearnedLimits).
type learnedLimits struct {
	webhooks     map[string]learned[activities.WebhookLimit]
	destinations map[string]learned[activities.DestinationLimit]
}

type learned[T any] struct {
	limit T
	at    time.Time
}

// newLearnedLimits starts from what the shard's last run carried, as if
// reported now.
func newLearnedLimits(carried activities.LearnedLimits, now time.Time) *learnedLimits {
	l := &learnedLimits{webhooks: map[string]learned[activities.WebhookLimit]{},
		destinations: map[string]learned[activities.DestinationLimit]{}}
	l.add(carried.Webhooks, carried.Destinations, now)
	return l
}

// add keeps what a round reported (the limit and whether it is in slow
// start; the rest is the round's to show).
func (l *learnedLimits) add(webhooks []activities.WebhookLimit, destinations []activities.DestinationLimit, now time.Time) {
	for _, w := range webhooks {
		l.webhooks[w.WebhookID] = learned[activities.WebhookLimit]{
			activities.WebhookLimit{WebhookID: w.WebhookID, Limit: w.Limit, SlowStart: w.SlowStart}, now}
	}
	for _, d := range destinations {
		l.destinations[d.Destination] = learned[activities.DestinationLimit]{d, now}
	}
}

// current forgets what is older than learnedLimitsFor and returns the
// rest, at most maxLearnedLimits of each kind (the most recent), sorted by
// key so the same state gives the same input.
func (l *learnedLimits) current(now time.Time) activities.LearnedLimits {
	return activities.LearnedLimits{
		Webhooks: recentLimits(l.webhooks, now, func(w activities.WebhookLimit) string { return w.WebhookID }),
		Destinations: recentLimits(l.destinations, now,
			func(d activities.DestinationLimit) string { return d.Destination }),
	}
}

func recentLimits[T any](m map[string]learned[T], now time.Time, key func(T) string) []T {
	var kept []learned[T]
	for k, v := range m {
		if now.Sub(v.at) > learnedLimitsFor {
			delete(m, k)
			continue
		}
		kept = append(kept, v)
	}
	slices.SortFunc(kept, func(a, b learned[T]) int {
		return cmp.Or(b.at.Compare(a.at), cmp.Compare(key(a.limit), key(b.limit)))
	})
	for _, v := range kept[min(len(kept), maxLearnedLimits):] {
		delete(m, key(v.limit))
	}
	kept = kept[:min(len(kept), maxLearnedLimits)]
	if len(kept) == 0 {
		return nil
	}
	out := make([]T, len(kept))
	for i, v := range kept {
		out[i] = v.limit
	}
	slices.SortFunc(out, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return out
}
