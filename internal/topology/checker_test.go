package topology_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/internal/topology"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// signedArrival is an attempt as the service sends it, signed with secret.
func signedArrival(webhookID, eventID, deliveryID string, attempt int, when time.Time, secret string, answered int) topology.Arrival {
	body := []byte(`{"webhooksID":"` + webhookID + `","eventId":"` + eventID + `"}`)
	h := http.Header{}
	h.Set("Authorization", webhooks.Sign(secret, body))
	h.Set("Webhook-Delivery-Id", deliveryID)
	h.Set("Webhook-Id", deliveryID)
	h.Set("Webhook-Timestamp", strconv.FormatInt(when.Unix(), 10))
	h.Set("Webhook-Signature", webhooks.SignStandard(secret, deliveryID, when, body))
	return topology.Arrival{At: when, WebhookID: webhookID, EventID: eventID, Attempt: attempt, Header: h, Body: body,
		Answered: answered, AnsweredAt: when.Add(10 * time.Millisecond)}
}

// cleanAudit is one event to one webhook, delivered on the second attempt.
func cleanAudit() topology.Audit {
	return topology.Audit{
		MaxAttempts: 6, MaxDuplicateRatio: 0.001, Timeout: 2 * time.Second,
		Webhooks: []topology.AuditWebhook{{ID: "wsu_a", AccountID: 1, Secrets: []topology.SecretSpan{{Secret: "old"}}}},
		Events:   []topology.AcceptedEvent{{ID: "wev_1", AccountID: 1, JobID: 42, At: at(0)}},
		Records: []topology.DeliveryRecord{{ID: "wdl_1", WebhookID: "wsu_a", EventID: "wev_1", Status: "succeeded", AttemptCount: 2,
			CreatedAt: at(0), AttemptStarts: map[int]time.Time{1: at(1), 2: at(3)}}},
		Arrivals: []topology.Arrival{
			signedArrival("wsu_a", "wev_1", "wdl_1", 1, at(1), "old", 500),
			signedArrival("wsu_a", "wev_1", "wdl_1", 2, at(3), "old", 200),
		},
	}
}

func failures(t *testing.T, a topology.Audit) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, c := range a.Check() {
		if c.Failures > 0 {
			out[c.Name] = c.Failures
			t.Logf("%s: %v", c.Name, c.Examples)
		}
	}
	return out
}

func TestAudit_CleanRunPasses(t *testing.T) {
	if f := failures(t, cleanAudit()); len(f) != 0 {
		t.Fatalf("failures %v, want none", f)
	}
}

func TestAudit_FindsEachKindOfFault(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(a *topology.Audit)
		want    string
	}{
		{"MissingRecord", func(a *topology.Audit) { a.Records = nil; a.Arrivals = nil }, topology.CheckLost},
		{"SucceededNeverArrived", func(a *topology.Audit) { a.Arrivals = nil }, topology.CheckLost},
		{"StillRetrying", func(a *topology.Audit) { a.Records[0].Status = "retrying"; a.Arrivals[1].Answered = 500 }, topology.CheckLost},
		{"FailedEarly", func(a *topology.Audit) { a.Records[0].Status = "failed"; a.Arrivals[1].Answered = 500 }, topology.CheckLost},
		{"SkippedWhileActive", func(a *topology.Audit) { a.Records[0].Status = "skipped"; a.Arrivals = nil }, topology.CheckLost},
		{"BadAuthorization", func(a *topology.Audit) { a.Arrivals[1].Header.Set("Authorization", "00") }, topology.CheckSignatures},
		{"BadStandardSignature", func(a *topology.Audit) { a.Arrivals[1].Header.Set("Webhook-Signature", "v1,AAAA") }, topology.CheckSignatures},
		{"OldSecretAfterRotation", func(a *topology.Audit) {
			a.Webhooks[0].Secrets = []topology.SecretSpan{{Secret: "old", Until: at(2)}, {Secret: "new", From: at(1.5)}}
		}, topology.CheckSignatures},
		{"SentAfterDeactivation", func(a *topology.Audit) {
			a.Webhooks[0].Inactive = []topology.InactiveSpan{{Requested: at(2), Answered: at(2.5), ReactivateRequested: at(10), ReactivateAnswered: at(11)}}
		}, topology.CheckDeactivated},
		{"DuplicateSuccess", func(a *topology.Audit) {
			a.Arrivals = append(a.Arrivals, signedArrival("wsu_a", "wev_1", "wdl_1", 3, at(4), "old", 200))
			a.Records[0].AttemptCount = 3
		}, topology.CheckDuplicates},
		{"OtherBytes", func(a *topology.Audit) { a.Arrivals[0].Body = []byte(`{"webhooksID":"wsu_a","eventId":"wev_1","x":1}`) }, topology.CheckDuplicates},
		{"MoreArrivalsThanAttempts", func(a *topology.Audit) { a.Records[0].AttemptCount = 1 }, topology.CheckConsistency},
		{"SucceededWithout2xx", func(a *topology.Audit) { a.Arrivals[1].Answered = 503 }, topology.CheckConsistency},
		{"SkippedAfterASuccess", func(a *topology.Audit) {
			a.Records[0].Status = "skipped"
			a.Webhooks[0].Inactive = []topology.InactiveSpan{{Requested: at(5), Answered: at(5.5), ReactivateRequested: at(9), ReactivateAnswered: at(9.1)}}
		}, topology.CheckConsistency},
		{"ArrivalWithoutRecord", func(a *topology.Audit) {
			a.Arrivals = append(a.Arrivals, signedArrival("wsu_a", "wev_9", "wdl_9", 1, at(5), "old", 200))
		}, topology.CheckConsistency},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := cleanAudit()
			tc.breakIt(&a)
			if f := failures(t, a); f[tc.want] == 0 {
				t.Fatalf("failures %v, want some in %q", f, tc.want)
			}
		})
	}
}

func TestAudit_AllowsWhatFaultsExcuse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		allow func(a *topology.Audit)
	}{
		{"PreviousSecretBeforeTheRotationAnswer", func(a *topology.Audit) {
			a.Webhooks[0].Secrets = []topology.SecretSpan{{Secret: "old", Until: at(3.5)}, {Secret: "new", From: at(2.5)}}
		}},
		{"EitherSecretWhileTheRotationIsInFlight", func(a *topology.Audit) {
			a.Webhooks[0].Secrets = []topology.SecretSpan{{Secret: "old", Until: at(3.5)}, {Secret: "new", From: at(2.9)}}
			a.Arrivals[1] = signedArrival("wsu_a", "wev_1", "wdl_1", 2, at(3), "new", 200)
		}},
		{"AttemptInFlightAtTheDeactivation", func(a *topology.Audit) {
			a.Arrivals[1].At = at(3.2) // started at 3 (the record), answered after
			a.Webhooks[0].Inactive = []topology.InactiveSpan{{Requested: at(3), Answered: at(3.1), ReactivateRequested: at(9), ReactivateAnswered: at(9.1)}}
		}},
		{"SkippedWhileInactive", func(a *topology.Audit) {
			a.Records[0].Status, a.Arrivals = "skipped", nil
			a.Webhooks[0].Inactive = []topology.InactiveSpan{{Requested: at(-1), Answered: at(-0.5), ReactivateRequested: at(5), ReactivateAnswered: at(5.5)}}
		}},
		{"FailedWithAttemptsSpent", func(a *topology.Audit) {
			a.Records[0].Status, a.Records[0].AttemptCount, a.Arrivals[1].Answered = "failed", 6, 503
			for n := 3; n <= 6; n++ {
				a.Arrivals = append(a.Arrivals, signedArrival("wsu_a", "wev_1", "wdl_1", n, at(float64(2*n)), "old", 503))
			}
		}},
		{"SkippedAfterFailedAttempts", func(a *topology.Audit) {
			a.Records[0].Status, a.Arrivals[1].Answered = "skipped", 503
			a.Webhooks[0].Inactive = []topology.InactiveSpan{{Requested: at(5), Answered: at(5.5), ReactivateRequested: at(9), ReactivateAnswered: at(9.1)}}
		}},
		{"LateSuccessRetried", func(a *topology.Audit) {
			a.Arrivals[0].Answered, a.Arrivals[0].AnsweredAt = 200, at(3.5) // 2.5 s: after the timeout
		}},
		{"RetriedAfterAnswersLost", func(a *topology.Audit) { a.Records[0].AttemptCount = 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := cleanAudit()
			tc.allow(&a)
			if f := failures(t, a); len(f) != 0 {
				t.Fatalf("failures %v, want none", f)
			}
		})
	}
}

func TestNewFaultPlan_EveryKindRecursOnASeededSchedule(t *testing.T) {
	plan := topology.NewFaultPlan(1, 3*time.Minute, time.Minute)
	seen := map[topology.FaultKind]int{}
	for _, steps := range [][]topology.FaultStep{plan.Infra, plan.Operations, plan.Receivers} {
		for _, s := range steps {
			seen[s.Kind]++
		}
	}
	for _, k := range topology.FaultKinds {
		want := 2
		if k == topology.FaultDatabaseOutage {
			want = 1
		}
		if seen[k] < want {
			t.Errorf("%s planned %d times in 3 minutes, want at least %d", k, seen[k], want)
		}
	}
	if seen[topology.FaultDatabaseOutage] != 1 {
		t.Errorf("%d long outages planned, want 1", seen[topology.FaultDatabaseOutage])
	}
	again := topology.NewFaultPlan(1, 3*time.Minute, time.Minute)
	if len(again.Infra) != len(plan.Infra) || again.Infra[3] != plan.Infra[3] || again.Receivers[2] != plan.Receivers[2] {
		t.Error("the same seed gave another plan")
	}
	if other := topology.NewFaultPlan(2, 3*time.Minute, time.Minute); other.Infra[0] == plan.Infra[0] && other.Infra[1] == plan.Infra[1] {
		t.Error("another seed gave the same plan")
	}
}
