package listeners

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/untrusted"
)

// RelayOutcome is how a relayed attempt ended for the worker.
type RelayOutcome int

const (
	// RelayAnswered: the listener answered; RelayResult.Answer is its
	// local endpoint's answer (or why there was none).
	RelayAnswered RelayOutcome = iota + 1
	// RelayNotListening: no `webhooks listen` took the attempt.
	RelayNotListening
	// RelayNoAnswer: a listener took the attempt but did not answer
	// before the relay had to answer the worker.
	RelayNoAnswer
)

// RelayResult is what the relay answers the worker with.
type RelayResult struct {
	Outcome RelayOutcome
	Answer  Answer
}

// signatureTolerance is how far a relayed attempt's webhook-timestamp may
// be from now, as Standard Webhooks receivers allow: a recorded delivery
// cannot be replayed to a listener later, and within the tolerance the
// relay remembers it (takeOnce).
const signatureTolerance = 5 * time.Minute

var (
	errNoRelay = webhooks.Errorf(webhooks.ENOTFOUND, "No listener at this address.")
	errForged  = webhooks.Errorf(webhooks.EUNAUTHORIZED, "Not a genuine delivery to this listener: the signature or its timestamp does not verify.")
)

// Relay takes one attempt the worker POSTed to the relay URL with token:
// it verifies the attempt's signatures with the listener's webhook secret,
// takes each signed request once (the same again is a replay: ECONFLICT),
// hands it to the listener's long poll (in whichever API process that
// runs) and waits for the listener's answer, at most Hold. With no
// listener polling it answers at once, and the delivery is retried as
// for any receiver that is down; with as many attempts held for the
// account's listeners as Limits allow, ETOOMANY (retried too).
func (s *Service) Relay(ctx context.Context, token string, header http.Header, body []byte) (RelayResult, error) {
	s.cleanup(ctx)
	if !strings.HasPrefix(token, webhooks.RelayTokenPrefix) {
		return RelayResult{}, errNoRelay
	}
	t, ok, err := s.store.byRelayToken(ctx, secrets.HashToken(token))
	if err != nil {
		return RelayResult{}, err
	}
	if !ok {
		return RelayResult{}, errNoRelay
	}
	signedAt, err := s.verify(ctx, t, header, body)
	if err != nil {
		return RelayResult{}, err
	}
	if err := s.takeOnce(ctx, t, header.Get(webhooks.HeaderStandardID), signedAt); err != nil {
		return RelayResult{}, err
	}
	if !t.Polling {
		return RelayResult{Outcome: RelayNotListening}, nil
	}
	attempt, _ := strconv.Atoi(header.Get(webhooks.HeaderAttempt))
	att := Attempt{
		ID: webhooks.NewID(webhooks.ListenerAttemptIDPrefix), DeliveryID: displayText(header.Get(webhooks.HeaderDeliveryID)),
		EventType: displayText(eventTypeOf(body)), Attempt: attempt, Header: relayedHeader(header), Body: body,
	}
	wake, unsubscribe := s.notifier.subscribe(answerKey(att.ID))
	defer unsubscribe()
	if err := s.store.enqueue(ctx, t, att, s.hold, s.opts.Limits); err != nil {
		return RelayResult{}, err
	}
	return s.awaitAnswer(ctx, att.ID, wake)
}

// errReplayed refuses a signed request the relay took already.
var errReplayed = webhooks.Errorf(webhooks.ECONFLICT, "This delivery attempt was relayed already: each signed request passes the relay once.")

// takeOnce records the request signed with webhook-id id at signedAt, or
// refuses it as a replay. Only the id and the timestamp are signed (the
// body is the id's), so they are what identifies a request
// (Webhook-Attempt could be changed on a copy); the worker signs each
// attempt when it sends it, and a delivery's attempts are at least a retry
// interval apart. The record is kept twice the tolerance past the
// timestamp, so a copy is refused even by an API process whose clock is
// up to the tolerance off the database's, which deletes old records.
func (s *Service) takeOnce(ctx context.Context, t relayTarget, id string, signedAt time.Time) error {
	sum := sha256.Sum256([]byte(id + "." + strconv.FormatInt(signedAt.Unix(), 10)))
	took, err := s.store.takeOnce(ctx, t.ID, sum[:], signedAt.Add(2*signatureTolerance))
	if err != nil {
		return err
	}
	if !took {
		return errReplayed
	}
	return nil
}

// awaitAnswer waits for the answer to an attempt it stored, at most Hold.
func (s *Service) awaitAnswer(ctx context.Context, attemptID string, wake <-chan struct{}) (RelayResult, error) {
	deadline := time.NewTimer(s.hold)
	defer deadline.Stop()
	tick := time.NewTicker(fallbackPoll)
	defer tick.Stop()
	for {
		select {
		case <-wake:
		case <-tick.C:
		case <-deadline.C:
			return s.giveUp(ctx, attemptID)
		case <-ctx.Done():
			_, _ = s.giveUp(ctx, attemptID)
			return RelayResult{}, ctx.Err()
		}
		ans, answered, _, err := s.store.answerOf(ctx, attemptID)
		if err != nil && ctx.Err() == nil {
			return RelayResult{}, err
		}
		if answered {
			return RelayResult{Outcome: RelayAnswered, Answer: ans}, nil
		}
	}
}

// giveUp stops waiting for an attempt's answer, unless one came first.
func (s *Service) giveUp(ctx context.Context, attemptID string) (RelayResult, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	closed, claimed, err := s.store.close(ctx, attemptID)
	if err != nil {
		return RelayResult{}, err
	}
	if !closed {
		ans, answered, _, err := s.store.answerOf(ctx, attemptID)
		if err != nil {
			return RelayResult{}, err
		}
		if answered {
			return RelayResult{Outcome: RelayAnswered, Answer: ans}, nil
		}
	}
	if claimed {
		return RelayResult{Outcome: RelayNoAnswer}, nil
	}
	return RelayResult{Outcome: RelayNotListening}, nil
}

// verify checks that the request is a genuine, recent attempt of the
// listener's webhook: Authorization (spec 5.2) and webhook-signature
// (Standard Webhooks, which signs the id and the timestamp too) both by
// its current secret or by its previous one while that is still valid.
// It returns the signed timestamp.
func (s *Service) verify(ctx context.Context, t relayTarget, h http.Header, body []byte) (time.Time, error) {
	ts, err := strconv.ParseInt(h.Get(webhooks.HeaderStandardTimestamp), 10, 64)
	if err != nil {
		return time.Time{}, errForged
	}
	at := time.Unix(ts, 0)
	if d := s.now().Sub(at); d > signatureTolerance || d < -signatureTolerance {
		return time.Time{}, errForged
	}
	current, err := s.box.Open(t.SecretKeyID, t.SecretCiphertext, t.SubscriptionID)
	if err != nil {
		return time.Time{}, err // internal: logged, never shown
	}
	keys := []string{current}
	if t.PreviousSecretExpiresAt != nil && t.PreviousSecretKeyID != nil && s.now().Before(*t.PreviousSecretExpiresAt) {
		if previous, err := s.box.Open(*t.PreviousSecretKeyID, t.PreviousSecretCiphertext, t.SubscriptionID); err == nil {
			keys = append(keys, previous)
		} else {
			s.logger.WarnContext(ctx, "cannot decrypt the previous hmac_secret of a listener's webhook", "subscription_id", t.SubscriptionID, "error", err.Error())
		}
	}
	id := h.Get(webhooks.HeaderStandardID)
	authorized, standard := false, false
	for _, k := range keys {
		authorized = authorized || webhooks.VerifySignature(k, body, h.Get("Authorization"))
		standard = standard || webhooks.VerifyStandardSignature(k, id, at, body, h.Get(webhooks.HeaderStandardSignature))
	}
	if !authorized || !standard {
		return time.Time{}, errForged
	}
	return at, nil
}

// notRelayed are the headers the listener does not get: those of the
// connection to the relay, and those a proxy before the relay added. The
// listener's own HTTP client sets Content-Length and Accept-Encoding for
// the local request as the worker's client did for this one.
var notRelayed = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authorization": true, "Proxy-Authenticate": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Content-Length": true, "Host": true, "Accept-Encoding": true,
	"Forwarded": true, "Via": true, "X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true,
	"X-Forwarded-Port": true, "X-Real-Ip": true,
}

// relayedHeader is the worker's request header without the connection's
// and proxies' headers: what the listener sends its local endpoint.
func relayedHeader(h http.Header) http.Header {
	out := http.Header{}
	hop := map[string]bool{}
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			hop[http.CanonicalHeaderKey(strings.TrimSpace(name))] = true
		}
	}
	for k, v := range h {
		if k = http.CanonicalHeaderKey(k); !notRelayed[k] && !hop[k] {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}

// eventTypeOf reads the payload's eventType, for display; "" when absent.
func eventTypeOf(body []byte) string {
	var p struct {
		EventType string `json:"eventType"`
	}
	_ = json.Unmarshal(body, &p)
	return p.EventType
}

// maxDisplayText bounds the display fields of an attempt, in bytes.
const maxDisplayText = 255

// displayText is s fit for a text column and a terminal line
// (untrusted.Text: valid UTF-8 without NUL or control characters, at most
// maxDisplayText bytes). Only the display fields are cleaned; the body and
// headers the listener forwards are what the worker sent.
func displayText(s string) string { return untrusted.Text(s, maxDisplayText) }

// cleanup deletes attempts closed minutes ago, polls that count no longer
// and relay requests out of tolerance, at most once a minute per process,
// in the background.
func (s *Service) cleanup(ctx context.Context) {
	now, last := s.now().UnixNano(), s.cleaned.Load()
	if now-last < int64(time.Minute) || !s.cleaned.CompareAndSwap(last, now) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := s.store.deleteOld(ctx, keepAttemptsFor); err != nil {
			s.logger.WarnContext(ctx, "cannot delete old listener attempts", "error", err.Error())
		}
	}()
}
