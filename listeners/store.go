package listeners

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/secrets"
)

// Store is the listeners, their polls and their attempts in PostgreSQL.
// Every listener lookup is scoped to one account: another account's
// listener id is simply not found. An attempt's headers, which carry the
// webhook's secret header values, are stored sealed with box.
type Store struct {
	pool *pgxpool.Pool
	q    *dbq.Queries
	box  *secrets.Box
}

// NewStore returns a Store on pool that seals attempts' headers with box.
func NewStore(pool *pgxpool.Pool, box *secrets.Box) *Store {
	return &Store{pool: pool, q: dbq.New(pool), box: box}
}

// namedListener is an account's listener of one name, with its webhook as
// it is now.
type namedListener dbq.GetListenerByNameRow

// byName returns the account's listener called name; false when there is
// none.
func (s *Store) byName(ctx context.Context, accountID int64, name string) (namedListener, bool, error) {
	r, err := s.q.GetListenerByName(ctx, dbq.GetListenerByNameParams{AccountID: accountID, Name: name})
	if errors.Is(err, pgx.ErrNoRows) {
		return namedListener{}, false, nil
	} else if err != nil {
		return namedListener{}, false, fmt.Errorf("read listener %q: %w", name, err)
	}
	return namedListener(r), true, nil
}

// save creates the account's listener called name on subscriptionID and
// tokenHash, or moves it there while it is still on expectedSubscriptionID
// (pass "" when there was none). false: another request changed it first.
func (s *Store) save(ctx context.Context, l Listener, tokenHash []byte, expectedSubscriptionID string) (Listener, bool, error) {
	r, err := s.q.SaveListener(ctx, dbq.SaveListenerParams{
		ID: l.ID, AccountID: l.AccountID, Name: l.Name, SubscriptionID: l.SubscriptionID,
		RelayTokenHash: tokenHash, ExpectedSubscriptionID: expectedSubscriptionID,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Listener{}, false, nil
	} else if err != nil {
		return Listener{}, false, fmt.Errorf("save listener %q: %w", l.Name, err)
	}
	l.ID, l.CreatedAt = r.ID, r.CreatedAt
	return l, true, nil
}

// get returns one listener of the account whose webhook is live, or
// ErrNotFound.
func (s *Store) get(ctx context.Context, accountID int64, id string) (Listener, error) {
	r, err := s.q.GetListener(ctx, dbq.GetListenerParams{ID: id, AccountID: accountID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Listener{}, ErrNotFound
	} else if err != nil {
		return Listener{}, fmt.Errorf("read listener %s: %w", id, err)
	}
	return Listener{ID: r.ID, AccountID: accountID, Name: r.Name, SubscriptionID: r.SubscriptionID, CreatedAt: r.CreatedAt}, nil
}

// relayTarget is the listener a relay request is addressed to.
type relayTarget dbq.GetListenerByRelayTokenRow

// byRelayToken returns the listener whose live webhook delivers to the
// relay with the token of tokenHash; false when there is none.
func (s *Store) byRelayToken(ctx context.Context, tokenHash []byte) (relayTarget, bool, error) {
	r, err := s.q.GetListenerByRelayToken(ctx, tokenHash)
	if errors.Is(err, pgx.ErrNoRows) {
		return relayTarget{}, false, nil
	} else if err != nil {
		return relayTarget{}, false, fmt.Errorf("read the listener of a relay request: %w", err)
	}
	return relayTarget(r), true, nil
}

var (
	errTooManyPolls = webhooks.Errorf(webhooks.ETOOMANY, "Too many long polls are open for this listener or account; stop a `webhooks listen` you no longer need, or poll again shortly.")
	errTooManyHeld  = webhooks.Errorf(webhooks.ETOOMANY, "The relay holds as many deliveries for this account's listeners as it may; the delivery is retried.")
)

// startPoll opens a long poll of the listener, which counts as polled for
// lease from now; errTooManyPolls when the listener or its account has as
// many open as limits allow. It returns the poll's id.
func (s *Store) startPoll(ctx context.Context, l Listener, lease time.Duration, limits Limits) (int64, error) {
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if err := q.LockListenerAccount(ctx, l.AccountID); err != nil {
			return err
		}
		var err error
		id, err = q.StartListenerPoll(ctx, dbq.StartListenerPollParams{
			ListenerID: l.ID, AccountID: l.AccountID, Seconds: lease.Seconds(),
			MaxPerListener: int32(limits.PollsPerListener), MaxPerAccount: int32(limits.PollsPerAccount),
		})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errTooManyPolls
	} else if err != nil {
		return 0, fmt.Errorf("start polling listener %s: %w", l.ID, err)
	}
	return id, nil
}

// endPoll records that the poll answered: it counts for grace more, the
// time its client takes to poll again.
func (s *Store) endPoll(ctx context.Context, id int64, grace time.Duration) error {
	if err := s.q.EndListenerPoll(ctx, dbq.EndListenerPollParams{ID: id, GraceSeconds: grace.Seconds()}); err != nil {
		return fmt.Errorf("end listener poll %d: %w", id, err)
	}
	return nil
}

// deletePoll forgets a poll whose client went away.
func (s *Store) deletePoll(ctx context.Context, id int64) error {
	if err := s.q.DeleteListenerPoll(ctx, id); err != nil {
		return fmt.Errorf("delete listener poll %d: %w", id, err)
	}
	return nil
}

// takeOnce records a signed relay request of the listener, identified by
// requestHash, until forgetAfter; false when it was taken already.
func (s *Store) takeOnce(ctx context.Context, listenerID string, requestHash []byte, forgetAfter time.Time) (bool, error) {
	_, err := s.q.RecordRelayedRequest(ctx, dbq.RecordRelayedRequestParams{ListenerID: listenerID, RequestHash: requestHash, ForgetAfter: forgetAfter})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("record a relay request of listener %s: %w", listenerID, err)
	}
	return true, nil
}

// headersAAD binds an attempt's sealed headers to the attempt.
func headersAAD(attemptID string) string { return "listener-attempt/" + attemptID + "/headers" }

// enqueue stores one attempt for the listener, its headers sealed, to be
// answered within hold, and wakes the processes that poll for it;
// errTooManyHeld when the account's listeners have as many attempts held as
// limits allow.
func (s *Store) enqueue(ctx context.Context, t relayTarget, a Attempt, hold time.Duration, limits Limits) error {
	headers, err := json.Marshal(a.Header)
	if err != nil {
		return fmt.Errorf("encode the headers of attempt %s: %w", a.ID, err)
	}
	keyID, sealed := s.box.Seal(string(headers), headersAAD(a.ID))
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if err := q.LockListenerAccount(ctx, t.AccountID); err != nil {
			return err
		}
		held, err := q.CountHeldListenerAttempts(ctx, t.AccountID)
		if err != nil {
			return err
		}
		if held >= int32(limits.HeldPerAccount) {
			return errTooManyHeld
		}
		_, err = q.EnqueueListenerAttempt(ctx, dbq.EnqueueListenerAttemptParams{
			ID: a.ID, ListenerID: t.ID, DeliveryID: a.DeliveryID, EventType: a.EventType, Attempt: int32(a.Attempt),
			HeadersKeyID: keyID, HeadersCiphertext: sealed, Body: a.Body, HoldSeconds: hold.Seconds(),
		})
		return err
	})
	if errors.Is(err, errTooManyHeld) {
		return err
	} else if err != nil {
		return fmt.Errorf("store attempt %s for listener %s: %w", a.ID, t.ID, err)
	}
	return s.notify(ctx, newAttemptKey(t.ID))
}

// claim hands the listener's oldest waiting attempt to the caller; false
// when none waits.
func (s *Store) claim(ctx context.Context, listenerID string) (Attempt, bool, error) {
	r, err := s.q.ClaimListenerAttempt(ctx, listenerID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Attempt{}, false, nil
	} else if err != nil {
		return Attempt{}, false, fmt.Errorf("claim an attempt of listener %s: %w", listenerID, err)
	}
	a := Attempt{ID: r.ID, DeliveryID: r.DeliveryID, EventType: r.EventType, Attempt: int(r.Attempt), Body: r.Body, AnswerBy: r.AnswerBy}
	headers, err := s.box.Open(r.HeadersKeyID, r.HeadersCiphertext, headersAAD(r.ID))
	if err != nil {
		return Attempt{}, false, fmt.Errorf("open the headers of attempt %s: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(headers), &a.Header); err != nil {
		return Attempt{}, false, fmt.Errorf("decode the headers of attempt %s: %w", r.ID, err)
	}
	return a, true, nil
}

// answer records the answer to a claimed attempt of the listener and wakes
// its holder. false: the attempt is not one of the listener's, or not
// claimed, or answered or given up already.
func (s *Store) answer(ctx context.Context, listenerID, attemptID string, ans Answer) (bool, error) {
	p := dbq.AnswerListenerAttemptParams{ID: attemptID, ListenerID: listenerID, AnswerMs: ptr(int32(min(ans.Duration.Milliseconds(), 1<<31-1)))}
	if ans.Error != "" {
		p.AnswerError = &ans.Error
	} else {
		headers, err := json.Marshal(ans.Header)
		if err != nil {
			return false, fmt.Errorf("encode the answer of attempt %s: %w", attemptID, err)
		}
		p.StatusCode, p.AnswerHeaders, p.AnswerBody = ptr(int32(ans.StatusCode)), headers, nonNil(ans.Body)
	}
	_, err := s.q.AnswerListenerAttempt(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("record the answer of attempt %s: %w", attemptID, err)
	}
	return true, s.notify(ctx, answerKey(attemptID))
}

// attemptExists reports whether the listener ever had the attempt (kept a
// few minutes after it closed).
func (s *Store) attemptExists(ctx context.Context, listenerID, attemptID string) (bool, error) {
	ok, err := s.q.ListenerAttemptExists(ctx, dbq.ListenerAttemptExistsParams{ID: attemptID, ListenerID: listenerID})
	if err != nil {
		return false, fmt.Errorf("read attempt %s: %w", attemptID, err)
	}
	return ok, nil
}

// answerOf returns the attempt's answer once it has one (true), and
// whether it was claimed.
func (s *Store) answerOf(ctx context.Context, attemptID string) (ans Answer, answered, claimed bool, err error) {
	r, err := s.q.GetListenerAttemptAnswer(ctx, attemptID)
	if err != nil {
		return Answer{}, false, false, fmt.Errorf("read the answer of attempt %s: %w", attemptID, err)
	}
	if r.AnsweredAt == nil {
		return Answer{}, false, r.ClaimedAt != nil, nil
	}
	if r.AnswerMs != nil {
		ans.Duration = time.Duration(*r.AnswerMs) * time.Millisecond
	}
	if r.AnswerError != nil {
		ans.Error = *r.AnswerError
		return ans, true, true, nil
	}
	if r.StatusCode != nil {
		ans.StatusCode = int(*r.StatusCode)
	}
	ans.Body = r.AnswerBody
	if len(r.AnswerHeaders) > 0 {
		if err := json.Unmarshal(r.AnswerHeaders, &ans.Header); err != nil {
			return Answer{}, false, false, fmt.Errorf("decode the answer of attempt %s: %w", attemptID, err)
		}
	}
	return ans, true, true, nil
}

// close gives up waiting for the attempt's answer: one that comes later is
// too late. closed is false when an answer came first; claimed says
// whether a listener took the attempt.
func (s *Store) close(ctx context.Context, attemptID string) (closed, claimed bool, err error) {
	claimedAt, err := s.q.CloseListenerAttempt(ctx, attemptID)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, true, nil
	} else if err != nil {
		return false, false, fmt.Errorf("close attempt %s: %w", attemptID, err)
	}
	return true, claimedAt != nil, nil
}

// deleteOld deletes attempts whose answer was due more than olderThan ago,
// polls that count no longer and relay requests whose timestamps the relay
// refuses by now anyway.
func (s *Store) deleteOld(ctx context.Context, olderThan time.Duration) error {
	if _, err := s.q.DeleteOldListenerAttempts(ctx, olderThan.Seconds()); err != nil {
		return fmt.Errorf("delete old listener attempts: %w", err)
	}
	if _, err := s.q.DeleteOldListenerPolls(ctx); err != nil {
		return fmt.Errorf("delete old listener polls: %w", err)
	}
	if _, err := s.q.DeleteOldRelayedRequests(ctx); err != nil {
		return fmt.Errorf("delete old relay requests: %w", err)
	}
	return nil
}

// notify wakes the waiters of key in every API process.
func (s *Store) notify(ctx context.Context, key string) error {
	if err := s.q.NotifyListeners(ctx, key); err != nil {
		return fmt.Errorf("notify %s: %w", key, err)
	}
	return nil
}

// Keys of notifications: a new attempt for a listener, an answer to an
// attempt.
func newAttemptKey(listenerID string) string { return "l:" + listenerID }
func answerKey(attemptID string) string      { return "a:" + attemptID }

func ptr[T any](v T) *T { return &v }

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// headerSubset returns the values of names in h, canonicalised.
func headerSubset(h http.Header, names ...string) http.Header {
	out := http.Header{}
	for _, n := range names {
		if v := h.Values(n); len(v) > 0 {
			out[http.CanonicalHeaderKey(n)] = append([]string(nil), v...)
		}
	}
	return out
}
