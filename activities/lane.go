package activities

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// RoundInput asks for one round of a webhook's own lane: take its due
// deliveries, a page at a time (rounds of its in-flight bound when Slow),
// attempt them within its in-flight limit, record. The tuning is the
// worker's.
type RoundInput struct {
	SubscriptionID string
	AccountID      int64
	// Slow: the last round had an attempt of SlowAttempt or more.
	Slow          bool
	WorkflowID    string
	WorkflowRunID string
	// Rate is the credit the last round left a rate-limited webhook.
	Rate *RateState `json:",omitempty"`
}

// Outcome is what one attempt gave: a value, whatever the receiver said.
type Outcome struct {
	DeliveryID string
	Attempt    int32
	Status     string // the delivery's status after the attempt
	StatusCode int    `json:",omitempty"` // 0: no HTTP response
	Error      string `json:",omitempty"`
	// RetryIn is the wait before the next attempt (the larger of the
	// backoff and the receiver's Retry-After); zero once final.
	RetryIn time.Duration `json:",omitempty"`
	// Duration is how long the attempt took.
	Duration time.Duration
	// Probe: the attempt was an open breaker's probe (it did not count
	// against the delivery's retries).
	Probe bool `json:",omitempty"`
}

// RoundResult is a round's outcomes and what the lane should do next.
type RoundResult struct {
	Outcomes []Outcome
	// Pending: some delivery is not final; the next is due in NextDueIn
	// (zero or negative: now).
	Pending   bool
	NextDueIn time.Duration
	// Stopped, when set, says why the lane has nothing more to do ever:
	// the webhook was deleted or deactivated, and what it had pending was
	// cancelled.
	Stopped string `json:",omitempty"`
	// IdleFor is how long the lane waits with nothing pending before its
	// webhook goes back to its shard (the worker's setting).
	IdleFor time.Duration `json:",omitempty"`
	// Breaker, when set, is the webhook's open breaker: the round sent at
	// most its probe, and NextDueIn is when the next one goes.
	Breaker *BreakerReport `json:",omitempty"`
	// Rate, when set, is a rate-limited webhook's credit for the next
	// round; NextDueIn is then no earlier than its next attempt may start.
	Rate *RateState `json:",omitempty"`
	// Limit is the webhook's in-flight limit when it has moved from the
	// initial one.
	Limit *WebhookLimit `json:",omitempty"`
}

// Slowest is the longest attempt of the round.
func (r RoundResult) Slowest() time.Duration {
	var d time.Duration
	for _, o := range r.Outcomes {
		d = max(d, o.Duration)
	}
	return d
}

// DeliverDue is one round of a webhook's own lane: it takes pages of the
// webhook's due deliveries (each counts an attempt and is leased), POSTs
// each signed body within the webhook's in-flight limit and with a slot of
// the worker's shared pool each, and records the outcomes in small groups
// as they arrive, until it has attempted a page's worth or found nothing
// due for the linger; then it says when the next delivery is due. A webhook deleted or
// deactivated has its pending deliveries ended and stops its lane.
func (a *Activities) DeliverDue(ctx context.Context, in RoundInput) (RoundResult, error) {
	t := a.deps.Tuning
	limit := t.PageSize
	if in.Slow {
		limit = t.MaxInFlight
	}
	res := RoundResult{IdleFor: t.LaneIdle}
	ramp, rate, err := a.lanePacing(ctx, in)
	if err != nil {
		return RoundResult{}, err
	}
	lingerUntil := a.deps.Now().Add(t.Linger)
	poll := lingerPollFirst
	for attempted := 0; attempted < limit; {
		target, err := a.laneTarget(ctx, in.SubscriptionID)
		if err != nil {
			return RoundResult{}, err
		}
		if target.Deleted || !target.Active {
			res.Stopped, err = a.endLane(ctx, target)
			return res, err
		}
		if target.Route != deliveries.RouteHeld && attempted == 0 {
			// Deliveries left held after the breaker closed (a release that
			// failed, an event ingested as it closed) go now.
			if _, err := a.deps.Store.ReleaseHeld(ctx, in.SubscriptionID); err != nil {
				return RoundResult{}, err
			}
		}
		if target.Route == deliveries.RouteHeld {
			if err := a.breakerStep(ctx, in, target, &res); err != nil {
				return RoundResult{}, err
			}
			if res.Breaker != nil {
				return a.withIncident(ctx, in.SubscriptionID, res)
			}
			ramp, err = a.rampFor(ctx, in.SubscriptionID) // the probe closed it: drain on the ramp
			if err != nil {
				return RoundResult{}, err
			}
			continue
		}
		page, err := lanePage(ctx, min(limit-attempted, t.PageSize), rate, ramp)
		if err != nil {
			return RoundResult{}, err
		}
		if page == 0 {
			break // over the rate: the lane's timer waits for credit
		}
		n, err := a.deliverLanePage(ctx, in, page, &res)
		spent(page, n, rate, ramp)
		if err != nil {
			return RoundResult{}, err
		}
		attempted += n
		if n > 0 {
			if res.Slowest() >= SlowAttempt {
				break // let the lane shrink its rounds
			}
			lingerUntil, poll = a.deps.Now().Add(t.Linger), lingerPollFirst
			continue
		}
		if !a.deps.Now().Before(lingerUntil) {
			break
		}
		// Nothing due: look again shortly, so deliveries that arrive in a
		// stream are taken without a wake-up through Temporal each.
		select {
		case <-ctx.Done():
			return RoundResult{}, ctx.Err()
		case <-time.After(poll):
		}
		poll = min(2*poll, lingerPollMax)
	}
	return a.laneNext(ctx, in.SubscriptionID, rate, res)
}

// laneNext says when the lane's next delivery is due (no earlier than its
// rate limit lets it start) and follows its incident.
func (a *Activities) laneNext(ctx context.Context, subscriptionID string, rate *rateLimiter, res RoundResult) (RoundResult, error) {
	var err error
	res.NextDueIn, res.Pending, err = a.deps.Store.NextDue(ctx, subscriptionID)
	if err != nil {
		return RoundResult{}, err
	}
	if rate != nil {
		res.Rate = rate.state()
		if res.Pending {
			res.NextDueIn = max(res.NextDueIn, rate.wait())
		}
	}
	return a.withIncident(ctx, subscriptionID, res)
}

// endLane ends the pending deliveries of a webhook deleted (cancelled) or
// deactivated (skipped, and its breaker forgotten), and says why its lane
// stops.
func (a *Activities) endLane(ctx context.Context, target deliveries.LaneTarget) (string, error) {
	status, reason := deliveries.StatusSkipped, "the webhook was inactive"
	if target.Deleted {
		status, reason = deliveries.StatusCancelled, "the webhook was deleted"
	}
	if _, err := a.deps.Store.EndPending(ctx, target.ID, status, reason); err != nil {
		return "", err
	}
	if !target.Deleted {
		if err := a.deps.Store.ResetBreaker(ctx, target.ID); err != nil {
			return "", err
		}
	}
	return reason, nil
}

// lanePage is how many of want a lane's next page may take: what its rate
// limit's credit allows (0: none now), waiting on the drain ramp after its
// breaker closed.
func lanePage(ctx context.Context, want int, rate *rateLimiter, ramp *ramp) (int, error) {
	if rate != nil {
		if want = min(want, rate.allowance()); want == 0 {
			return 0, nil
		}
	}
	if ramp.active() {
		var ok bool
		if want, ok = ramp.take(ctx, want); !ok {
			return 0, ctx.Err()
		}
	}
	return want, nil
}

// lanePacing is what paces a lane's round: the drain ramp after its
// breaker closed, and its rate limit's credit.
func (a *Activities) lanePacing(ctx context.Context, in RoundInput) (*ramp, *rateLimiter, error) {
	ramp, err := a.rampFor(ctx, in.SubscriptionID)
	if err != nil {
		return nil, nil, err
	}
	rate, err := a.rateFor(ctx, in.SubscriptionID, in.Rate)
	return ramp, rate, err
}

// laneTarget loads the lane's webhook as it is now (Deleted when gone).
func (a *Activities) laneTarget(ctx context.Context, id string) (deliveries.LaneTarget, error) {
	observed := a.deps.Now()
	target, err := a.deps.Store.LoadLane(ctx, id)
	switch {
	case errors.Is(err, deliveries.ErrSubscriptionGone):
		target, err = deliveries.LaneTarget{ID: id, Deleted: true}, nil
	case err != nil:
		return deliveries.LaneTarget{}, err
	}
	target.ObservedAt = observed
	return target, nil
}

// spent counts a page's n attempts against a lane's rate limit and drain
// ramp, and gives the ramp back what the page took (taken) but did not
// attempt.
func spent(taken, n int, rate *rateLimiter, ramp *ramp) {
	ramp.used(taken, n)
	if rate != nil {
		rate.spend(n)
	}
}

// withIncident follows the webhook's incident, if one goes on (announce
// it, end it), and keeps the lane until it is over: the lane looks again
// when the incident is next due a step.
func (a *Activities) withIncident(ctx context.Context, subscriptionID string, res RoundResult) (RoundResult, error) {
	state, err := a.deps.Store.BreakerTimes(ctx, subscriptionID)
	if errors.Is(err, deliveries.ErrSubscriptionGone) {
		return res, nil
	}
	if err != nil {
		return RoundResult{}, err
	}
	wait, going := a.incidentStep(ctx, state)
	if !going {
		return res, nil
	}
	wait = max(wait, time.Millisecond)
	if !res.Pending || wait < res.NextDueIn {
		res.Pending, res.NextDueIn = true, wait
	}
	return res, nil
}

// deliverLanePage claims at most limit of the webhook's due deliveries
// (and at most its room under its in-flight limit), then loads the
// webhook (so a rotation answered before the claim signs them), attempts
// them through the round pipeline shard rounds use, waiting for every
// attempt (a lane is where slow receivers are waited for), and records
// their outcomes as they arrive; it returns how many it attempted.
func (a *Activities) deliverLanePage(ctx context.Context, in RoundInput, limit int, res *RoundResult) (int, error) {
	lease := a.deps.AttemptTimeout + leaseSlack
	claimed := false
	claim := func(ctx context.Context, n int, _ claimRooms) (deliveries.ClaimedPage, error) {
		if claimed {
			return deliveries.ClaimedPage{}, nil // one page a call
		}
		claimed = true
		// Only what may go now: the webhook's room (its attempts handed
		// over by its shard still count).
		return a.claimLanePage(ctx, in, min(n, limit, max(a.deps.InFlight.WebhookAvailable(in.SubscriptionID), 1)), lease)
	}
	p := a.newPipeline(ctx, claim, recordDeadline(ctx, a.deps.Now().Add(lease)))
	p.patience, p.linger = 0, 0
	if err := p.run(ctx); err != nil {
		return 0, err
	}
	res.Outcomes = append(res.Outcomes, p.rec.outcomes...)
	if l := a.reportLimits(ctx, maps.Keys(p.seen)); len(l) == 1 {
		res.Limit = &l[0]
	}
	return p.attempted, nil
}

// claimLanePage claims at most n of the lane's due deliveries and gives
// them the webhook as it is now; none when it is gone or inactive (the
// claims come back when their lease ends, and the next round ends them).
func (a *Activities) claimLanePage(ctx context.Context, in RoundInput, n int, lease time.Duration) (deliveries.ClaimedPage, error) {
	claimed, err := a.deps.Store.ClaimDue(ctx, deliveries.Claim{
		SubscriptionID: in.SubscriptionID, Limit: n, WorkflowID: in.WorkflowID, WorkflowRunID: in.WorkflowRunID,
		Lease: lease, OrderMaxWait: a.deps.OrderMaxWait,
	})
	if err != nil || len(claimed) == 0 {
		return deliveries.ClaimedPage{}, err
	}
	observed := a.deps.Now()
	target, err := a.deps.Store.LoadLane(ctx, in.SubscriptionID)
	if err != nil && !errors.Is(err, deliveries.ErrSubscriptionGone) {
		return deliveries.ClaimedPage{}, err
	}
	target.ObservedAt = observed
	if err != nil || target.Deleted || !target.Active {
		return deliveries.ClaimedPage{}, nil
	}
	for i := range claimed {
		claimed[i].Webhook = target
	}
	return deliveries.ClaimedPage{Claimed: claimed}, nil
}

// recordAndObserve records attempts' outcomes in one write, reports the
// webhooks it deactivated, follows late answers, feeds the observers and
// returns the outcomes as a round reports them. A write that fails (the
// database is unreachable for a while) is tried again until shortly before
// until, when the claims' leases end: outcomes the receivers already gave
// are not thrown away, which would send those deliveries again.
func (a *Activities) recordAndObserve(ctx context.Context, claimed []deliveries.Claimed, records []deliveries.AttemptRecord, lates []pendingLate, until time.Time) ([]Outcome, error) {
	changes, err := a.recordUntil(ctx, records, until)
	if err != nil {
		return nil, err
	}
	changes = append(changes, a.disabledByReceivers(ctx, records)...)
	a.applyWebhookChanges(ctx, changes)
	outcomes := make([]Outcome, 0, len(records))
	for i, r := range records {
		if lates != nil && lates[i].answer != nil {
			go a.recordLateAnswer(lates[i], r.SubscriptionID, claimed[i].EventType, r)
		}
		outcomes = append(outcomes, outcomeOf(r))
		a.observe(ctx, claimed[i], r)
	}
	return outcomes, nil
}

// recordDeadline is how long a round keeps trying to record the outcomes
// its receivers gave: until shortly before the round itself must end, and
// at least until its claims' leases end. Past the leases no other round can
// take those deliveries meanwhile: the round that would (the next of the
// same shard or lane) waits for this one. Only a round that dies (its
// worker stopped) leaves them to be sent again, with the same id and bytes.
func recordDeadline(ctx context.Context, leasedUntil time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok && d.Add(-2*time.Second).After(leasedUntil) {
		return d.Add(-2 * time.Second)
	}
	return leasedUntil
}

// recordUntil writes records, trying again with backoff until a second
// before until (or ctx ends).
func (a *Activities) recordUntil(ctx context.Context, records []deliveries.AttemptRecord, until time.Time) ([]deliveries.WebhookChange, error) {
	wait := 100 * time.Millisecond
	policy := deliveries.RecordPolicy{AutoDisable: a.deps.AutoDisable, Breaker: a.deps.Breaker}
	for {
		changes, err := a.deps.Store.RecordAttempts(ctx, records, policy)
		if err == nil {
			return changes, nil
		}
		if !a.deps.Now().Add(wait).Before(until.Add(-time.Second)) {
			return nil, err
		}
		a.deps.Logger.WarnContext(ctx, "cannot record attempts; trying again", "attempts", len(records), "error", err.Error())
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// outcomeOf is an attempt's outcome as a round reports it.
func outcomeOf(r deliveries.AttemptRecord) Outcome {
	o := Outcome{DeliveryID: r.DeliveryID, Attempt: r.AttemptNumber, Status: r.Status,
		StatusCode: r.StatusCode, Error: r.ErrorMessage, Duration: r.Duration}
	if !deliveries.IsFinal(r.Status) {
		o.RetryIn = r.RetryIn
	}
	return o
}

// leaseSlack is what a claim's lease adds to one attempt's timeout. Rounds
// of one shard or lane run one after another, so the lease only keeps a
// round that runs again after its worker died (its WFT retried elsewhere)
// from sending what the dead worker may have sent; short, so those
// deliveries come back within seconds. A worker that lost its task but still runs may overlap
// with the retry: an extra send, with the same delivery id.
const leaseSlack = 5 * time.Second

// Polling while a round lingers.
const (
	lingerPollFirst = 5 * time.Millisecond
	lingerPollMax   = 80 * time.Millisecond
)

// SlowAttempt is an attempt slow enough that its lane takes rounds of its
// in-flight bound only, so a round never waits through many waves of slow attempts
// before its outcomes are recorded.
const SlowAttempt = time.Second

// attemptClaimed makes the attempt of one claimed delivery and returns its
// record: the body is fixed at the first attempt, from the stored event.
// With a gate, a record of status "" means the attempt did not start.
func (a *Activities) attemptClaimed(ctx context.Context, c deliveries.Claimed, sign signer, gate *attemptGate) (deliveries.AttemptRecord, pendingLate) {
	target := c.Webhook
	rec := deliveries.AttemptRecord{DeliveryID: c.ID, SubscriptionID: target.ID, AttemptNumber: c.Attempt,
		ClientURL: target.ClientURL, SecretVersion: target.SecretVersion}
	if c.Attempt > c.MaxAttempts {
		// Its last attempt was made, but its outcome was lost (a crash
		// between the POST and the record): nothing is left to try.
		rec.AttemptNumber, rec.Status = c.MaxAttempts, deliveries.StatusFailed
		rec.ErrorMessage = "the outcome of the last attempt was lost"
		return rec, pendingLate{}
	}
	body := c.Payload
	if body == nil {
		var err error
		if body, err = deliveries.BuildBody(deliveries.EventBody{AccountID: target.AccountID, SubscriptionID: target.ID,
			WebhookName: target.Name, EventID: c.EventID, EventType: c.EventType, EventData: c.EventData,
			ToolName: c.EventToolName, AcceptedAt: c.EventAcceptedAt}); err != nil {
			rec.Status, rec.ErrorKind, rec.ErrorMessage = deliveries.StatusFailed, deliveries.KindInvalidPayload, err.Error()
			return rec, pendingLate{}
		}
		rec.Payload = body
	}
	ctx, span := a.attemptSpan(ctx, c)
	defer span.End()
	post := a.post(ctx, target.AccountID, target.ClientURL, body, func(h http.Header) error {
		if err := sign(h, c.ID, body); err != nil {
			return err
		}
		h.Set(webhooks.HeaderDeliveryID, c.ID)
		h.Set(webhooks.HeaderEventID, c.EventID)
		h.Set(webhooks.HeaderAttempt, strconv.Itoa(int(c.Attempt)))
		c.SetSequenceHeader(h)
		return nil
	}, gate, &attemptFence{a: a, target: target})
	if post.NotStarted {
		return deliveries.AttemptRecord{DeliveryID: c.ID, SubscriptionID: target.ID}, pendingLate{}
	}
	rec.StartedAt, rec.Duration, rec.StatusCode = post.StartedAt, post.Duration, post.StatusCode
	rec.ErrorKind, rec.ErrorMessage, rec.ResponseSnippet = post.Kind, post.Message, post.Snippet
	rec.Status, rec.RetryIn = a.deps.Schedule.Next(c.Attempt, c.MaxAttempts, post.Kind, post.StatusCode, post.RetryAfter)
	if post.Directive != "" {
		rec.Directive = post.Directive
		if rec.Status != deliveries.StatusSucceeded {
			// The receiver asked to stop: no retry, and the record says why.
			rec.Status, rec.ErrorKind = deliveries.StatusFailed, deliveries.KindAborted
			rec.ErrorMessage = fmt.Sprintf("%s; the receiver asked to stop (%s: %s)", rec.ErrorMessage, webhooks.HeaderDirective, post.Directive)
		}
	}
	return rec, pendingLate{answer: post.Late, span: span.SpanContext()}
}

// pendingLate is an attempt that may still get a late answer.
type pendingLate struct {
	answer <-chan LateAnswer
	span   trace.SpanContext // the attempt's
}

// recordLateAnswer waits for an attempt's late answer, if one comes, and
// notes it on the attempt's record (already written), in a span of the
// attempt's trace and for the metrics. It holds no attempt slot.
func (a *Activities) recordLateAnswer(l pendingLate, subscriptionID, eventType string, rec deliveries.AttemptRecord) {
	ans, ok := <-l.answer
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(trace.ContextWithSpanContext(context.Background(), l.span), 30*time.Second)
	defer cancel()
	_, span := a.deps.Tracer.Start(ctx, "AttemptLateAnswer", trace.WithAttributes(
		attribute.String("webhook.delivery_id", rec.DeliveryID), attribute.Int("webhook.attempt", int(rec.AttemptNumber)),
		attribute.Int("http.response.status_code", ans.StatusCode), attribute.Int64("webhook.late_after_ms", ans.After.Milliseconds())))
	defer span.End()
	for try := 0; try < 5; try++ { // a test delivery's record may still be on its way
		recorded, err := a.deps.Store.RecordLateAnswer(ctx, rec.DeliveryID, rec.AttemptNumber, ans.StatusCode, ans.After)
		if err != nil {
			a.deps.Logger.WarnContext(ctx, "cannot record a late answer", "delivery_id", rec.DeliveryID, "error", err.Error())
			return
		}
		if recorded {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	a.deps.Logger.InfoContext(ctx, "late answer", "delivery_id", rec.DeliveryID, "attempt", rec.AttemptNumber,
		"status_code", ans.StatusCode, "after_ms", ans.After.Milliseconds())
	if a.deps.ObserveLateAnswer != nil {
		a.deps.ObserveLateAnswer(ctx, LateAnswerOutcome{DeliveryID: rec.DeliveryID, SubscriptionID: subscriptionID,
			EventType: eventType, Attempt: rec.AttemptNumber, StatusCode: ans.StatusCode, After: ans.After})
	}
}

// attemptSpan starts the span of an attempt in its event's trace (the
// ingestion request's), linked to the round (a shard's or a lane's) that
// made it, so one trace runs from ingestion to the outbound request.
func (a *Activities) attemptSpan(ctx context.Context, c deliveries.Claimed) (context.Context, trace.Span) {
	round := trace.LinkFromContext(ctx)
	parent := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": c.EventTraceParent})
	if !trace.SpanContextFromContext(parent).IsValid() {
		return a.deps.Tracer.Start(ctx, "AttemptDelivery")
	}
	_, span := a.deps.Tracer.Start(parent, "AttemptDelivery", trace.WithLinks(round),
		trace.WithAttributes(attribute.String("webhook.delivery_id", c.ID), attribute.Int("webhook.attempt", int(c.Attempt))))
	return trace.ContextWithSpan(ctx, span), span
}

func (a *Activities) observe(ctx context.Context, c deliveries.Claimed, r deliveries.AttemptRecord) {
	target := c.Webhook
	if a.deps.ObserveAttempt == nil || r.StartedAt.IsZero() {
		return
	}
	var since time.Duration
	if r.Payload != nil { // the first attempt of an ingested event's delivery
		since = a.deps.Now().Sub(c.EventAcceptedAt)
	}
	a.deps.ObserveAttempt(ctx, AttemptOutcome{
		DeliveryID: c.ID, SubscriptionID: target.ID, AccountID: target.AccountID, EventType: c.EventType,
		Attempt: r.AttemptNumber, StatusCode: r.StatusCode, ErrorKind: r.ErrorKind, Duration: r.Duration,
		DeliveryStatus: r.Status, SinceEvent: since,
	})
}
