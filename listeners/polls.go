package listeners

import (
	"context"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// Limits bound what one account's listeners hold at once across every API
// process.
type Limits struct {
	PollsPerListener int // long polls open on one listener
	PollsPerAccount  int // long polls open on the account's listeners
	HeldPerAccount   int // attempts the relay holds for the account's listeners
}

// The default Limits: a `listen` keeps one poll open, so four leave room
// for a restart and a second terminal; an account's listeners together
// hold at most 100 attempts (each up to the 1 MiB the API reads of a
// request).
const (
	DefaultPollsPerListener = 4
	DefaultPollsPerAccount  = 20
	DefaultHeldPerAccount   = 100
)

// withDefaults is l with every unset bound at its default.
func (l Limits) withDefaults() Limits {
	if l.PollsPerListener <= 0 {
		l.PollsPerListener = DefaultPollsPerListener
	}
	if l.PollsPerAccount <= 0 {
		l.PollsPerAccount = DefaultPollsPerAccount
	}
	if l.HeldPerAccount <= 0 {
		l.HeldPerAccount = DefaultHeldPerAccount
	}
	return l
}

// Next long polls the listener: it returns the oldest attempt waiting for
// it, or waits up to wait for one (nil when none came). While it waits,
// and for pollGrace after it answers (the time the CLI takes to poll
// again), the listener counts as polled; when its client goes away (ctx
// ends), this poll no longer counts, while others of the listener still
// do. A listener or account with as many polls open as Limits allow gets
// ETOOMANY. It needs write access: answers decide deliveries' outcomes.
func (s *Service) Next(ctx context.Context, a subscriptions.Access, listenerID string, wait time.Duration) (*Attempt, error) {
	if err := mayWrite(a); err != nil {
		return nil, err
	}
	if !webhooks.IsListenerID(listenerID) {
		return nil, ErrNotFound
	}
	if wait < 0 || wait > MaxWait {
		return nil, webhooks.FieldErrorf("wait", "wait must be between 0 and %d seconds.", int(MaxWait.Seconds()))
	}
	l, err := s.store.get(ctx, a.Account().ID, listenerID)
	if err != nil {
		return nil, err
	}
	s.cleanup(ctx)
	wake, unsubscribe := s.notifier.subscribe(newAttemptKey(l.ID))
	defer unsubscribe()
	pollID, err := s.store.startPoll(ctx, l, wait+pollGrace, s.opts.Limits)
	if err != nil {
		return nil, err
	}
	att, err := s.waitForAttempt(ctx, l.ID, wait, wake)
	if ctx.Err() != nil {
		s.pollDone(ctx, pollID, false)
		return nil, ctx.Err()
	}
	s.pollDone(ctx, pollID, true)
	return att, err
}

// waitForAttempt claims the listener's oldest waiting attempt, looking
// again when woken and every fallbackPoll, until wait ends (nil), the
// server drains (nil) or ctx ends.
func (s *Service) waitForAttempt(ctx context.Context, listenerID string, wait time.Duration, wake <-chan struct{}) (*Attempt, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(fallbackPoll)
	defer tick.Stop()
	for {
		att, ok, err := s.store.claim(ctx, listenerID)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if ok {
			return &att, nil
		}
		select {
		case <-wake:
		case <-tick.C:
		case <-deadline.C:
			return nil, nil
		case <-s.draining:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// pollDone records that a poll answered (its client polls again within
// pollGrace) or that its client went away (answered false), so the relay
// stops holding deliveries for it.
func (s *Service) pollDone(ctx context.Context, pollID int64, answered bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	var err error
	if answered {
		err = s.store.endPoll(ctx, pollID, pollGrace)
	} else {
		err = s.store.deletePoll(ctx, pollID)
	}
	if err != nil {
		s.logger.WarnContext(ctx, "cannot record the end of a listener poll", "poll_id", pollID, "answered", answered, "error", err.Error())
	}
}
