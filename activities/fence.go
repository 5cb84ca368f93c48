package activities

import (
	"context"
	"errors"
	"sync"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// fenceWithin is how young a state a fence lets an attempt start with:
// webhooks.AttemptStateFreshFor less a margin, so the send itself
// (microseconds after the check) is still within AttemptStateFreshFor.
const fenceWithin = webhooks.AttemptStateFreshFor - 50*time.Millisecond

// fenceCacheSize bounds the webhook states kept between checks.
const fenceCacheSize = 10000

// attemptFence is the check an attempt makes right before it is sent:
// that the webhook state it is sent with (read by its claim) is at most
// webhooks.AttemptStateFreshFor old, or still current. An attempt that
// waited longer for its slot reads the webhook again (one read per webhook
// per AttemptStateFreshFor, shared by its attempts) and does not start if
// the webhook was deactivated or deleted, or its client_url or secret
// changed: the API answers such a change AttemptStateFreshFor after it
// committed, so nothing starts after the answer with the state before it.
type attemptFence struct {
	fences *fenceStates
	target deliveries.WebhookTarget
}

// fenceStates caches webhook states read by fences: one per worker,
// shared by its rounds.
type fenceStates struct {
	store *deliveries.Store
	now   func() time.Time

	mu      sync.Mutex
	targets map[string]deliveries.WebhookTarget
}

// check returns why the attempt must not start, or "".
func (f attemptFence) check(ctx context.Context) string {
	if f.fences.now().Sub(f.target.ObservedAt) < fenceWithin {
		return ""
	}
	cur, err := f.fences.current(ctx, f.target.ID)
	switch {
	case err != nil:
		return "the webhook could not be read again before a late start: " + err.Error()
	case cur.Deleted:
		return "the webhook was deleted after this delivery was claimed"
	case !cur.Active:
		return "the webhook was deactivated after this delivery was claimed"
	case cur.ClientURL != f.target.ClientURL:
		return "the webhook's client_url changed after this delivery was claimed"
	case cur.SecretVersion != f.target.SecretVersion:
		return "the webhook's secret was rotated after this delivery was claimed"
	case f.fences.now().Sub(cur.ObservedAt) >= fenceWithin:
		return "reading the webhook again took too long"
	}
	return ""
}

// current returns the webhook's state read within the fence's bound,
// reading it when the cached one is older.
func (s *fenceStates) current(ctx context.Context, id string) (deliveries.WebhookTarget, error) {
	s.mu.Lock()
	t, ok := s.targets[id]
	s.mu.Unlock()
	if ok && s.now().Sub(t.ObservedAt) < fenceWithin {
		return t, nil
	}
	t, err := s.store.ReadTarget(ctx, id, s.now)
	if errors.Is(err, deliveries.ErrSubscriptionGone) {
		t, err = deliveries.WebhookTarget{ID: id, Deleted: true, ObservedAt: t.ObservedAt}, nil
	}
	if err != nil {
		return deliveries.WebhookTarget{}, err
	}
	s.mu.Lock()
	if s.targets == nil || len(s.targets) >= fenceCacheSize {
		s.targets = map[string]deliveries.WebhookTarget{}
	}
	s.targets[id] = t
	s.mu.Unlock()
	return t, nil
}
