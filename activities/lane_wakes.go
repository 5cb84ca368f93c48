package activities

import (
	"sync"

	"github.com/jobhooks/jobhooks/deliveries"
)

// laneWakes wakes the own lane of a webhook a shard round moved there
// (its attempt outlasted the patience) once that webhook's handed-over
// attempts have ended, not when it moved: until then its lane can claim
// nothing (their leases hold its deliveries), and fifty hung webhooks'
// lanes started at once cost the box a burst of workflow starts that
// delayed every other account's deliveries. One per worker.
type laneWakes struct {
	mu      sync.Mutex
	running map[string]int                      // handed-over attempts still running, by webhook
	moved   map[string]deliveries.RoutedWebhook // moved, waiting for those to end
}

func newLaneWakes() *laneWakes {
	return &laneWakes{running: map[string]int{}, moved: map[string]deliveries.RoutedWebhook{}}
}

// handed notes an attempt of the webhook handed over.
func (l *laneWakes) handed(webhookID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[webhookID]++
}

// movedNow takes the webhooks a round moved to their own lanes and
// returns those to wake now: none of their handed-over attempts runs any
// more. The others are woken by the end of their last one (ended).
func (l *laneWakes) movedNow(moved []deliveries.RoutedWebhook) []deliveries.RoutedWebhook {
	l.mu.Lock()
	defer l.mu.Unlock()
	var now []deliveries.RoutedWebhook
	for _, m := range moved {
		if l.running[m.SubscriptionID] > 0 {
			l.moved[m.SubscriptionID] = m
			continue
		}
		now = append(now, m)
	}
	return now
}

// ended notes the end of a handed-over attempt of the webhook and returns
// its lane to wake when it was the last and the webhook moved.
func (l *laneWakes) ended(webhookID string) (deliveries.RoutedWebhook, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[webhookID] > 1 {
		l.running[webhookID]--
		return deliveries.RoutedWebhook{}, false
	}
	delete(l.running, webhookID)
	m, ok := l.moved[webhookID]
	delete(l.moved, webhookID)
	return m, ok
}
