package deliveries

import (
	"fmt"
	"slices"
)

// Routes: who takes a webhook's due deliveries
// (webhook_subscriptions.delivery_route). Each pending delivery carries the
// route that takes it (webhook_deliveries.route): its webhook's when it is
// made (IngestEvents), and its webhook's again after each change (a route
// change moves the webhook's pending deliveries in the same statement; a
// shared claim, HoldDeliveries and ReleaseHeld move any that lagged
// behind). A webhook's route changes only by the Transitions below.
const (
	// RouteShared: the webhook's shard, in rounds shared with other
	// webhooks (the usual case).
	RouteShared = "shared"
	// RouteOwn: the webhook's own lane workflow: after one of its attempts
	// outlasted a shared round's patience (a slow or hung receiver), after
	// its breaker held its deliveries (the lane drains them), and for as
	// long as it has a rate limit. An open breaker on on_outage retry
	// moves nobody: a receiver that fails fast costs a shared round
	// nothing, and a lane per failing webhook would cost Temporal a
	// workflow task per retry.
	RouteOwn = "own"
	// RoutePaused: nobody; an operator paused the webhook's deliveries.
	// They wait, durably, until it is resumed.
	RoutePaused = "paused"
	// RouteHeld: nobody attempts the webhook's deliveries because its
	// endpoint breaker is open and it holds them (OnOutageHold); its own
	// lane sends one probe per backoff step.
	RouteHeld = "held"
)

// Transition is a change of a webhook's route that the service makes.
type Transition struct {
	From, To string
	// Why the service makes it.
	Why string
	// By is what makes it: a caller of Store.SetRoute, or a statement that
	// changes routes itself (its test checks it against this table).
	By string
	// NoRateLimit: only a webhook without a rate limit makes it, checked
	// in the statement that moves it. A rate limit is kept by the
	// webhook's own lane alone, so no shared round ever takes a
	// rate-limited webhook's deliveries.
	NoRateLimit bool
}

// Transitions are every change of route the service makes: the one place
// that says which exist. Store.SetRoute refuses any other; the statements
// that change routes themselves (RecordAttempts, ResetBreaker,
// DisableByReceiver) are tested against it.
var Transitions = []Transition{
	{From: RouteShared, To: RouteOwn, Why: "an attempt outlasted a shared round's patience (a slow or hung receiver)",
		By: "the round's hand-over (activities pipeline, Store.SetRoute)"},
	{From: RouteShared, To: RouteOwn, Why: "a rate limit was set (max_requests_per_second): its own lane keeps it",
		By: "the delivery settings' write (webhooksettings, SetRouteIn); migration 00023 for limits set before"},
	{From: RouteOwn, To: RouteShared, Why: "its own lane had nothing to do for the idle timeout",
		By: "the own lane's idle return (activities ReturnIdleToShard, Store.SetRoute)", NoRateLimit: true},
	{From: RouteShared, To: RoutePaused, Why: "an operator paused it", By: "PauseWebhook (Store.SetRoute)"},
	{From: RouteOwn, To: RoutePaused, Why: "an operator paused it", By: "PauseWebhook (Store.SetRoute)"},
	{From: RoutePaused, To: RouteShared, Why: "an operator resumed it", By: "ResumeWebhook (Store.SetRoute)", NoRateLimit: true},
	{From: RoutePaused, To: RouteOwn, Why: "an operator resumed it, and it has a rate limit",
		By: "ResumeWebhook (Store.SetRoute)"},
	{From: RouteShared, To: RouteHeld, Why: "its breaker opened, and it holds its deliveries during an outage (on_outage hold)",
		By: "RecordAttempts"},
	{From: RouteOwn, To: RouteHeld, Why: "its breaker opened (or is open and on_outage became hold), and it holds its deliveries",
		By: "RecordAttempts"},
	{From: RouteHeld, To: RouteOwn, Why: "a probe was answered: its breaker closed, and its lane drains what was held",
		By: "RecordAttempts"},
	{From: RouteHeld, To: RouteOwn, Why: "on_outage became retry while its breaker was open", By: "RecordAttempts"},
	{From: RouteHeld, To: RouteOwn, Why: "it was deactivated while held (auto-disable, or its receiver asked to stop)",
		By: "RecordAttempts, DisableByReceiver"},
	{From: RouteHeld, To: RouteShared, Why: "it was deactivated or deleted by hand while held: its breaker is reset",
		By: "ResetBreaker", NoRateLimit: true},
	{From: RouteHeld, To: RouteOwn, Why: "it was deactivated or deleted by hand while held, and it has a rate limit",
		By: "ResetBreaker"},
}

// ValidRoute reports whether r is a route.
func ValidRoute(r string) bool {
	return r == RouteShared || r == RouteOwn || r == RoutePaused || r == RouteHeld
}

// Allowed returns the transitions from from to to (none: the service never
// makes that change).
func Allowed(from, to string) []Transition {
	var out []Transition
	for _, t := range Transitions {
		if t.From == from && t.To == to {
			out = append(out, t)
		}
	}
	return out
}

// RouteChangeError is a route change that Transitions does not hold.
type RouteChangeError struct{ From, To string }

func (e RouteChangeError) Error() string {
	if e.From == "" {
		return fmt.Sprintf("a change to route %q names no route to move from", e.To)
	}
	return fmt.Sprintf("no transition from route %q to %q (deliveries/routes.go)", e.From, e.To)
}

// gate checks c against Transitions before anything is written: every
// route it moves from must have a transition to c.To. It says whether the
// move takes only webhooks without a rate limit.
func (c RouteChange) gate() (noRateLimit bool, err error) {
	if len(c.From) == 0 {
		return false, RouteChangeError{To: c.To}
	}
	for _, from := range c.From {
		ts := Allowed(from, c.To)
		if len(ts) == 0 {
			return false, RouteChangeError{From: from, To: c.To}
		}
		noRateLimit = noRateLimit || slices.ContainsFunc(ts, func(t Transition) bool { return t.NoRateLimit })
	}
	return noRateLimit, nil
}
