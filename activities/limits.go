package activities

import (
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/inflight"
)

// endpointLimits keeps how many attempts may be in flight from this
// worker to each webhook and to each destination (scheme, host, port):
// the one gate an attempt passes before it starts, and what the claims
// ask for (a webhook's room) so they take only what may go now.
//
// It is the rounds' only handle on the worker's in-flight limits
// (inflight.Limits): the shard's claim, the lane's claim, the pipeline's
// start and the reports all ask it.
type endpointLimits interface {
	// room is how many more attempts to the webhook may start now.
	room(webhookID, destination string) int
	// webhookRoom is room by the webhook's own limit alone (a lane's
	// claim, before it knows the webhook's destination).
	webhookRoom(webhookID string) int
	// destinationRoom is how many more attempts to the destination may
	// start now, whatever their webhook.
	destinationRoom(destination string) int
	// tryStart takes a place for one attempt, or says there is none.
	tryStart(webhookID, destination string) (attemptPermit, bool)
	// initial is the limit of a webhook or destination not seen lately:
	// what a claim takes of one it has no room for.
	initial() int
	// ahead is how many more of a webhook's deliveries its answers free
	// within claimAhead.
	ahead(webhookID string) int
	// changed is the limits of webhooks whose limit is not the initial
	// one (those a person would want to see), sorted by webhook.
	changed(webhookIDs iter.Seq[string]) []WebhookLimit
	// changedDestinations is the same of destinations.
	changedDestinations(destinations iter.Seq[string]) []DestinationLimit
	// seed starts the webhooks and destinations this worker does not
	// hold at what another worker learned.
	seed(learned LearnedLimits)
}

// attemptPermit is one attempt's place; done gives it back with the
// attempt's record (what an adaptive limit learns from).
type attemptPermit interface {
	done(rec deliveries.AttemptRecord)
}

// adaptiveLimits are the worker's inflight limits: each webhook's and
// destination's limit follows its receiver's answers.
type adaptiveLimits struct {
	l   *inflight.Limits
	now func() time.Time
}

func (a adaptiveLimits) room(webhookID, destination string) int {
	return a.l.Available(inflight.Target{Webhook: webhookID, Destination: destination})
}

func (a adaptiveLimits) destinationRoom(destination string) int {
	return a.l.DestinationAvailable(destination)
}

func (a adaptiveLimits) webhookRoom(webhookID string) int {
	return a.l.WebhookAvailable(webhookID)
}

func (a adaptiveLimits) tryStart(webhookID, destination string) (attemptPermit, bool) {
	p, ok := a.l.TryAcquire(inflight.Target{Webhook: webhookID, Destination: destination}, a.now())
	return adaptivePermit{p}, ok
}

func (a adaptiveLimits) initial() int { return a.l.Initial() }

// claimAhead is how far ahead a claim takes what a webhook's answers will
// free: well within the fence's 200 ms, so what waits for a place starts
// with the state its claim read.
const claimAhead = 50 * time.Millisecond

// ahead is the webhook's limit once per recent latency within claimAhead,
// at most 8 times.
func (a adaptiveLimits) ahead(webhookID string) int {
	s, ok := a.l.Snapshot(webhookID)
	if !ok || s.Latency <= 0 {
		return 0
	}
	return s.Limit * min(int(claimAhead/s.Latency), 8)
}

func (a adaptiveLimits) changed(webhookIDs iter.Seq[string]) []WebhookLimit {
	var out []WebhookLimit
	for id := range webhookIDs {
		s, ok := a.l.Snapshot(id)
		if !ok || s.Limit == a.l.Initial() {
			continue
		}
		out = append(out, WebhookLimit{WebhookID: id, Limit: s.Limit, InFlight: s.InFlight, UnloadedLatency: s.MinLatency,
			SlowStart: s.SlowStart})
	}
	slices.SortFunc(out, func(x, y WebhookLimit) int { return strings.Compare(x.WebhookID, y.WebhookID) })
	return out
}

func (a adaptiveLimits) changedDestinations(destinations iter.Seq[string]) []DestinationLimit {
	var out []DestinationLimit
	for key := range destinations {
		s, ok := a.l.DestinationSnapshot(key)
		if !ok || s.Limit == a.l.InitialDestination() {
			continue
		}
		out = append(out, DestinationLimit{Destination: key, Limit: s.Limit, SlowStart: s.SlowStart})
	}
	slices.SortFunc(out, func(x, y DestinationLimit) int { return strings.Compare(x.Destination, y.Destination) })
	return out
}

func (a adaptiveLimits) seed(learned LearnedLimits) {
	now := a.now()
	for _, w := range learned.Webhooks {
		a.l.SeedWebhook(w.WebhookID, inflight.Learned{Limit: w.Limit, SlowStart: w.SlowStart}, now)
	}
	for _, d := range learned.Destinations {
		a.l.SeedDestination(d.Destination, inflight.Learned{Limit: d.Limit, SlowStart: d.SlowStart}, now)
	}
}

type adaptivePermit struct{ p inflight.Permit }

func (p adaptivePermit) done(rec deliveries.AttemptRecord) {
	p.p.Done(inflight.Outcome{Class: loadClassOf(rec), Latency: rec.Duration})
}

// loadClassOf is what an attempt's record says about its receiver's load:
// answers by their status; no answer (a timeout, a refused or reset
// connection, a refused TLS handshake) is the strongest signal; an
// attempt that never went out, or failed for a reason of ours, says
// nothing.
func loadClassOf(rec deliveries.AttemptRecord) inflight.Class {
	switch {
	case rec.Status == "" || rec.StartedAt.IsZero():
		return inflight.NotSent
	case rec.StatusCode > 0:
		return inflight.ClassOfStatus(rec.StatusCode)
	case rec.ErrorKind == deliveries.KindTimeout, rec.ErrorKind == deliveries.KindConnection:
		return inflight.Unanswered
	default:
		return inflight.NotSent
	}
}

// destinationOf is the destination a webhook's attempts share with its
// account's other webhooks at the same scheme, host and port: never with
// another account's, so a tenant's bad receiver uses up only its own. The
// claim groups webhooks by the same key (deliveries.DestinationKey).
func destinationOf(w deliveries.WebhookTarget) string {
	return deliveries.DestinationKey(w.AccountID, w.ClientURL)
}

// WebhookLimit is a webhook's in-flight limit as a round leaves it, for
// the round's marker (the Temporal Web UI shows it) and the health object.
type WebhookLimit struct {
	WebhookID string
	Limit     int
	InFlight  int `json:",omitempty"`
	// UnloadedLatency is the least latency lately, what the limit compares
	// answers with.
	UnloadedLatency time.Duration `json:",omitempty"`
	// SlowStart: the limit still grows by a step a success (no rejection
	// or unanswered attempt lately).
	SlowStart bool `json:",omitempty"`
}

// DestinationLimit is a destination's in-flight limit as a round leaves
// it (the destination as deliveries.DestinationKey names it).
type DestinationLimit struct {
	Destination string
	Limit       int
	SlowStart   bool `json:",omitempty"`
}

// LearnedLimits are limits a shard carries from its rounds to its next
// ones (workflows.Shard): a round that runs on another worker than the
// last (DELIVERY_SHARD_ROUNDS=any-worker, or the shard moved when its
// worker stopped) starts its receivers where they were, not at the
// initial limits, so a host that refuses above a few is not probed again
// by every worker.
type LearnedLimits struct {
	Webhooks     []WebhookLimit     `json:",omitempty"`
	Destinations []DestinationLimit `json:",omitempty"`
}
