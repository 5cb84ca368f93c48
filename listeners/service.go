// Package listeners is webhooks listen on the server: a listener is an
// ordinary webhook whose client_url is the API's own relay, which hands each
// attempt to a long-polling CLI through PostgreSQL and answers the worker
// with the CLI's local answer.
package listeners

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// Listener is an account's listener: a name, and the webhook whose
// deliveries come through the relay.
type Listener struct {
	ID             string // wls_...
	AccountID      int64
	Name           string
	SubscriptionID string
	CreatedAt      time.Time
}

// Attempt is one attempt of a delivery, handed to a listener: exactly what
// the worker sent.
type Attempt struct {
	ID         string // wla_...
	DeliveryID string
	EventType  string
	Attempt    int
	Header     http.Header
	Body       []byte
	// AnswerBy is when the relay stops waiting and answers the worker
	// itself.
	AnswerBy time.Time
}

// Answer is what the listener's local endpoint answered to an attempt: a
// status code with the headers and body the relay passes on, or the Error
// that kept it from answering.
type Answer struct {
	StatusCode int
	Header     http.Header
	Body       []byte
	Error      string
	Duration   time.Duration
}

// Limits of the API.
const (
	MaxWait         = 30 * time.Second // the longest long poll
	DefaultWait     = 25 * time.Second
	MaxAnswerBody   = 64 << 10 // what the worker reads of an answer at most
	MaxAnswerError  = 1000     // characters
	pollGrace       = 5 * time.Second
	fallbackPoll    = time.Second
	keepAttemptsFor = 5 * time.Minute
)

// ErrNotFound is the answer for an unknown listener, another account's, or
// one whose webhook was deleted.
var ErrNotFound = webhooks.Errorf(webhooks.ENOTFOUND, "Listener not found.")

// errNotConfigured refuses listeners on a server without RELAY_BASE_URL.
var errNotConfigured = webhooks.Errorf(webhooks.EUNAVAILABLE, "Listening is not configured on this server (RELAY_BASE_URL is not set).")

// Options configure the Service.
type Options struct {
	// RelayBaseURL is where workers reach the relay (RELAY_BASE_URL);
	// empty refuses to open listeners.
	RelayBaseURL string
	// AttemptTimeout is the time a receiver has to answer
	// (DELIVERY_TIMEOUT): the relay answers the worker before it.
	AttemptTimeout time.Duration
	// Limits bound the long polls and held attempts of one listener and
	// account; a zero field takes its default (DefaultPollsPerListener,
	// DefaultPollsPerAccount, DefaultHeldPerAccount).
	Limits Limits
	Logger *slog.Logger
}

// AnswerHeaders are the headers of a local endpoint's answer that go back
// to the worker: what the delivery core acts on in any receiver's answer
// (the body's type, Retry-After, the receiver's Webhook-Delivery
// directive).
func AnswerHeaders() []string {
	return []string{"Content-Type", "Retry-After", webhooks.HeaderDirective}
}

// Service is the listener use cases: opening a listener, long polling its
// attempts, answering them, and relaying the worker's requests.
type Service struct {
	store    *Store
	subs     *subscriptions.Service
	box      *secrets.Box
	notifier *notifier
	opts     Options
	hold     time.Duration
	logger   *slog.Logger
	cleaned  atomic.Int64 // unix nanos of the last cleanup of old attempts
	now      func() time.Time

	draining  chan struct{} // closed by Drain
	drainOnce sync.Once
}

// NewService returns the use cases over pool; its notification connection
// (opened when first needed) lives until ctx ends. box opens webhook
// secrets, which verify relay requests and are shown to the listener.
func NewService(ctx context.Context, pool *pgxpool.Pool, box *secrets.Box, subs *subscriptions.Service, opts Options) (*Service, error) {
	if pool == nil || box == nil || subs == nil || opts.Logger == nil || opts.AttemptTimeout <= 0 {
		return nil, errors.New("listeners: a pool, a Box, the subscriptions Service, a Logger and the attempt timeout are required")
	}
	connConfig := pool.Config().ConnConfig
	opts.Limits = opts.Limits.withDefaults()
	s := &Service{
		store: NewStore(pool, box), subs: subs, box: box, opts: opts, logger: opts.Logger, now: time.Now,
		draining: make(chan struct{}),
		hold:     opts.AttemptTimeout - min(time.Second, opts.AttemptTimeout/5),
		notifier: newNotifier(ctx, func(ctx context.Context) (*pgx.Conn, error) {
			return pgx.ConnectConfig(ctx, connConfig.Copy())
		}, opts.Logger),
	}
	return s, nil
}

// Drain ends the long polls of this process at once, with nothing, and
// every later one: the server is shutting down, and the listeners poll
// again elsewhere. Relayed attempts still wait for their answers (at most
// Hold, under the shutdown grace).
func (s *Service) Drain() {
	s.drainOnce.Do(func() { close(s.draining) })
}

// Hold is how long the relay waits for a listener's answer before it
// answers the worker itself: under the attempt timeout.
func (s *Service) Hold() time.Duration { return s.hold }

// OpenInput is what a listener is opened with.
type OpenInput struct {
	Name       string
	EventTypes []string
	JobIDs     []int64 // empty: every job
}

// Opened is a listener ready to poll.
type Opened struct {
	Listener Listener
	// Secret is its webhook's hmac_secret, with which the forwarded
	// deliveries are signed.
	Secret string
	// Created is true when the listener is new; false when the account's
	// listener of that name was reused.
	Created bool
}

// Open returns the account's listener called in.Name, creating it with a
// webhook of its own on first use. A listener whose webhook was deleted,
// or no longer delivers to the relay, gets a new webhook; the webhook is
// set to in's events and jobs and made active. It needs write access.
func (s *Service) Open(ctx context.Context, a subscriptions.Access, in OpenInput) (Opened, error) {
	if err := mayWrite(a); err != nil {
		return Opened{}, err
	}
	if s.opts.RelayBaseURL == "" {
		return Opened{}, errNotConfigured
	}
	if err := webhooks.ValidateListenerName(in.Name); err != nil {
		return Opened{}, err
	}
	for range 3 {
		o, done, err := s.open(ctx, a, in)
		if err != nil || done {
			return o, err
		}
	}
	return Opened{}, webhooks.Errorf(webhooks.ECONFLICT, "Listener %q is being opened by another request; try again.", in.Name)
}

// open makes one try of Open; done is false when another request changed
// the listener meanwhile.
func (s *Service) open(ctx context.Context, a subscriptions.Access, in OpenInput) (o Opened, done bool, err error) {
	accountID := a.Account().ID
	cur, found, err := s.store.byName(ctx, accountID, in.Name)
	if err != nil {
		return Opened{}, false, err
	}
	if found && cur.WebhookLive && s.deliversHere(cur.ClientUrl, cur.RelayTokenHash) {
		active := true
		jobIDs := nonNilIDs(in.JobIDs)
		if _, err := s.subs.Update(ctx, a, cur.SubscriptionID, webhooks.SubscriptionUpdate{
			EventTypes: &in.EventTypes, JobIDs: &jobIDs, Active: &active,
		}); err != nil {
			return Opened{}, false, err
		}
		secret, err := s.box.Open(cur.SecretKeyID, cur.SecretCiphertext, cur.SubscriptionID)
		if err != nil {
			return Opened{}, false, fmt.Errorf("open the secret of listener %s's webhook: %w", cur.ID, err)
		}
		l := Listener{ID: cur.ID, AccountID: accountID, Name: in.Name, SubscriptionID: cur.SubscriptionID, CreatedAt: cur.CreatedAt}
		return Opened{Listener: l, Secret: secret}, true, nil
	}

	l := Listener{ID: webhooks.NewID(webhooks.ListenerIDPrefix), AccountID: accountID, Name: in.Name}
	if found {
		l.ID = cur.ID
	}
	token := secrets.NewToken(webhooks.RelayTokenPrefix)
	sub, secret, err := s.subs.Create(ctx, a, webhooks.Subscription{
		Name:        in.Name,
		Description: fmt.Sprintf("Deliveries of `webhooks listen` (listener %s), relayed by the API to the computer that listens.", l.ID),
		ClientURL:   webhooks.RelayURL(s.opts.RelayBaseURL, token),
		EventTypes:  in.EventTypes,
		JobIDs:      nonNilIDs(in.JobIDs),
		Active:      true,
	})
	if err != nil {
		return Opened{}, false, err
	}
	l.SubscriptionID = sub.ID
	expected := ""
	if found {
		expected = cur.SubscriptionID
	}
	saved, ok, err := s.store.save(ctx, l, secrets.HashToken(token), expected)
	if err == nil && !ok {
		err = errLostRace
	}
	if err != nil {
		// Nobody will deliver to or through this webhook: remove it.
		if derr := s.subs.Delete(context.WithoutCancel(ctx), a, sub.ID); derr != nil {
			s.logger.WarnContext(ctx, "cannot delete the webhook of a listener that was not saved", "subscription_id", sub.ID, "error", derr.Error())
		}
		if errors.Is(err, errLostRace) {
			return Opened{}, false, nil
		}
		return Opened{}, false, err
	}
	s.logger.InfoContext(ctx, "listener opened", "account_id", accountID, "listener_id", saved.ID, "subscription_id", sub.ID, "new", !found)
	return Opened{Listener: saved, Secret: secret, Created: !found}, true, nil
}

var errLostRace = errors.New("the listener changed meanwhile")

// deliversHere reports whether clientURL is this server's relay with the
// token of tokenHash.
func (s *Service) deliversHere(clientURL string, tokenHash []byte) bool {
	prefix := webhooks.RelayPrefix(s.opts.RelayBaseURL)
	token, ok := strings.CutPrefix(clientURL, prefix)
	return ok && token != "" && subtle.ConstantTimeCompare(secrets.HashToken(token), tokenHash) == 1
}

// Answer records the local endpoint's answer to an attempt the listener
// was handed. An answer that comes after the relay gave up, or a second
// answer, is a conflict; another listener's attempt is not found.
func (s *Service) Answer(ctx context.Context, a subscriptions.Access, listenerID, attemptID string, ans Answer) error {
	if err := mayWrite(a); err != nil {
		return err
	}
	if !webhooks.IsListenerID(listenerID) {
		return ErrNotFound
	}
	if err := ans.validate(); err != nil {
		return err
	}
	l, err := s.store.get(ctx, a.Account().ID, listenerID)
	if err != nil {
		return err
	}
	errNoAttempt := webhooks.Errorf(webhooks.ENOTFOUND, "Listener attempt not found.")
	if !webhooks.IsListenerAttemptID(attemptID) {
		return errNoAttempt
	}
	if ans.Error == "" {
		ans.Header = headerSubset(ans.Header, AnswerHeaders()...)
	}
	ok, err := s.store.answer(ctx, l.ID, attemptID, ans)
	if err != nil || ok {
		return err
	}
	exists, err := s.store.attemptExists(ctx, l.ID, attemptID)
	if err != nil {
		return err
	}
	if !exists {
		return errNoAttempt
	}
	return webhooks.Errorf(webhooks.ECONFLICT, "Too late: this attempt was answered already, or the relay stopped waiting and answered the worker itself.")
}

// validate checks an answer: a status code or an error, not both.
func (ans Answer) validate() error {
	switch {
	case ans.Error != "" && ans.StatusCode != 0:
		return webhooks.FieldErrorf("error", "Give either status_code or error, not both.")
	case ans.Error == "" && (ans.StatusCode < 200 || ans.StatusCode > 599):
		return webhooks.FieldErrorf("status_code", "status_code must be an HTTP status from 200 to 599 (or give error).")
	case len([]rune(ans.Error)) > MaxAnswerError:
		return webhooks.FieldErrorf("error", "error must be at most %d characters.", MaxAnswerError)
	case len(ans.Body) > MaxAnswerBody:
		return webhooks.FieldErrorf("body_base64", "body_base64 must decode to at most %d bytes.", MaxAnswerBody)
	case ans.Duration < 0:
		return webhooks.FieldErrorf("duration_ms", "duration_ms must not be negative.")
	}
	return nil
}

// mayWrite refuses an Access that may not change the account's webhooks.
func mayWrite(a subscriptions.Access) error {
	if a.Account().ID == 0 {
		return errors.New("listeners: Access did not come from Authorize")
	}
	return a.WriteErr()
}

func nonNilIDs(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
