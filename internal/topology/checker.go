package topology

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	webhooks "github.com/jobhooks/jobhooks"
)

// AuditWebhook is what the chaos run did to one webhook: who it matches,
// which secret was valid when, and when it was inactive.
type AuditWebhook struct {
	ID        string
	AccountID int64
	JobIDs    []int64 // empty: every job
	Secrets   []SecretSpan
	Inactive  []InactiveSpan
}

// SecretSpan is when a secret may sign: from the moment the request that
// made it was sent (zero: the webhook's creation) until the rotation that
// replaced it was answered (zero: never).
type SecretSpan struct {
	Secret      string
	From, Until time.Time
}

// InactiveSpan is one deactivation: when the PUT active=false was sent
// and answered, and when the PUT active=true was sent and answered.
type InactiveSpan struct {
	Requested, Answered                     time.Time
	ReactivateRequested, ReactivateAnswered time.Time
}

// AcceptedEvent is an event the ingestion endpoint answered 202.
type AcceptedEvent struct {
	ID        string // wev_...
	AccountID int64
	JobID     int64
	At        time.Time
}

// DeliveryRecord is a delivery as PostgreSQL holds it.
type DeliveryRecord struct {
	ID, WebhookID, EventID, Status string
	AttemptCount                   int
	CreatedAt                      time.Time
	// AttemptStarts are the started_at of its recorded attempts, by number,
	// and AttemptOutcomes what each recorded (a status code or an error
	// kind), for the report.
	AttemptStarts   map[int]time.Time
	AttemptOutcomes map[int]string
	// AttemptSnippets and AttemptMessages are each attempt row's
	// response_snippet and error_message, as stored.
	AttemptSnippets map[int]string
	AttemptMessages map[int]string
}

// Arrival is one POST a receiver got, and what it answered.
type Arrival struct {
	At        time.Time
	WebhookID string // from the body
	EventID   string // from the body
	Attempt   int    // Webhook-Attempt
	Header    http.Header
	Body      []byte
	Answered  int // the status the receiver wrote; 0 when it wrote none, or nothing HTTP
	// AnsweredAt is when it wrote it (a hostile answer: when it was whole;
	// zero when the sender went away first).
	AnsweredAt time.Time
	// Hostile names the HostileAnswer the receiver gave, if it gave one.
	Hostile string
}

// DeliveryID is the arrival's Webhook-Delivery-Id.
func (a Arrival) DeliveryID() string { return a.Header.Get("Webhook-Delivery-Id") }

// Audit is everything the checker compares.
type Audit struct {
	Webhooks []AuditWebhook
	Events   []AcceptedEvent
	Records  []DeliveryRecord
	Arrivals []Arrival
	// MaxAttempts is the attempts a delivery gets (6); MaxDuplicateRatio
	// the share of redundant successful sends allowed (0.001).
	MaxAttempts       int
	MaxDuplicateRatio float64
	// Timeout is DELIVERY_TIMEOUT: a 2xx written later than this after the
	// request arrived came too late to count as the attempt's answer.
	Timeout time.Duration
	// Faults are the windows during which each process or database fault
	// was under way; the duplicates check says which were under way when
	// each duplicate's first success arrived.
	Faults []FaultWindow
}

// FaultWindow is one injected fault, from its start until it was undone.
type FaultWindow struct {
	Kind     string
	From, To time.Time
}

// CheckResult is one check's verdict and the first few failures.
type CheckResult struct {
	Name     string
	Checked  int // how many things it looked at
	Failures int
	Note     string
	Examples []string
}

// Passed says whether the check found nothing wrong.
func (c CheckResult) Passed() bool { return c.Failures == 0 }

func (c *CheckResult) fail(format string, args ...any) {
	c.Failures++
	if len(c.Examples) < 8 {
		c.Examples = append(c.Examples, fmt.Sprintf(format, args...))
	}
}

// Check names, in the order Check returns them.
const (
	CheckLost        = "0 accepted deliveries lost"
	CheckSignatures  = "0 invalid signatures"
	CheckDeactivated = "0 sends after deactivation answered"
	CheckDuplicates  = "duplicates <= 0.1%, same id and bytes"
	CheckConsistency = "records match what receivers saw"
	CheckFailedSends = "failed deliveries sent exactly their attempt count"
	CheckSkipped     = "skipped deliveries never answered 2xx"
	CheckHostile     = "hostile answers recorded as answered"
	CheckHistory     = "workflow histories <= 10,000 events"
)

// Check runs every check of the audit.
func (au Audit) Check() []CheckResult {
	hooks := map[string]*AuditWebhook{}
	for i := range au.Webhooks {
		hooks[au.Webhooks[i].ID] = &au.Webhooks[i]
	}
	records := map[string]*DeliveryRecord{} // webhook/event
	byID := map[string]*DeliveryRecord{}
	for i := range au.Records {
		r := &au.Records[i]
		records[r.WebhookID+"/"+r.EventID] = r
		byID[r.ID] = r
	}
	arrivals := map[string][]*Arrival{} // delivery id
	for i := range au.Arrivals {
		a := &au.Arrivals[i]
		arrivals[a.DeliveryID()] = append(arrivals[a.DeliveryID()], a)
	}
	return []CheckResult{
		au.checkLost(hooks, records, arrivals),
		au.checkSignatures(hooks, byID),
		au.checkDeactivated(hooks, byID),
		au.checkDuplicates(arrivals),
		au.checkConsistency(byID, arrivals),
		au.checkFailedSends(arrivals),
		au.checkSkipped(arrivals),
		au.checkHostile(byID, arrivals),
	}
}

func matches(h *AuditWebhook, job int64) bool {
	return len(h.JobIDs) == 0 || slices.Contains(h.JobIDs, job)
}

func received2xx(as []*Arrival) bool {
	for _, a := range as {
		if a.Answered >= 200 && a.Answered < 300 {
			return true
		}
	}
	return false
}

// success says whether the receiver answered a 2xx in time: a success the
// sender must have seen.
func (au Audit) success(a *Arrival) bool {
	return a.Answered >= 200 && a.Answered < 300 && (au.Timeout == 0 || a.AnsweredAt.Sub(a.At) < au.Timeout)
}

func (au Audit) receivedSuccess(as []*Arrival) bool {
	return slices.ContainsFunc(as, au.success)
}

// checkLost: every accepted (event, matching webhook) has a record, which
// ended as it should: succeeded and received, failed with its attempts
// spent, or skipped while its webhook was inactive.
func (au Audit) checkLost(hooks map[string]*AuditWebhook, records map[string]*DeliveryRecord, arrivals map[string][]*Arrival) CheckResult {
	c := CheckResult{Name: CheckLost}
	for _, e := range au.Events {
		for _, h := range au.Webhooks {
			if h.AccountID != e.AccountID || !matches(&h, e.JobID) {
				continue
			}
			c.Checked++
			r := records[h.ID+"/"+e.ID]
			switch {
			case r == nil:
				c.fail("event %s (accepted %s) has no delivery record for webhook %s", e.ID, e.At.Format(time.RFC3339Nano), h.ID)
			case r.Status == "succeeded":
				if len(arrivals[r.ID]) == 0 {
					c.fail("delivery %s is recorded succeeded but never arrived", r.ID)
				}
			case r.Status == "failed":
				if r.AttemptCount < au.MaxAttempts {
					c.fail("delivery %s failed after %d of %d attempts", r.ID, r.AttemptCount, au.MaxAttempts)
				}
			case r.Status == "skipped":
				if !inactiveSince(&h, r.CreatedAt) {
					c.fail("delivery %s skipped but webhook %s was not deactivated after it was created (%s)", r.ID, h.ID, r.CreatedAt.Format(time.RFC3339Nano))
				}
			default:
				c.fail("delivery %s is %s after the drain (%d attempts)", r.ID, r.Status, r.AttemptCount)
			}
		}
	}
	for _, r := range au.Records {
		h := hooks[r.WebhookID]
		if h == nil {
			c.fail("delivery %s belongs to unknown webhook %s", r.ID, r.WebhookID)
		}
	}
	return c
}

// inactiveSince says whether a deactivation of h was still in force (not
// yet answered back to active) at or after t.
func inactiveSince(h *AuditWebhook, t time.Time) bool {
	for _, s := range h.Inactive {
		if s.ReactivateAnswered.IsZero() || !s.ReactivateAnswered.Before(t) {
			return true
		}
	}
	return false
}

// attemptStart is when the record says the arrival's attempt started, or
// the arrival time when no attempt row says.
func attemptStart(r *DeliveryRecord, a *Arrival) (time.Time, bool) {
	if r != nil {
		if s, ok := r.AttemptStarts[a.Attempt]; ok && !s.After(a.At) {
			return s, true
		}
	}
	return a.At, false
}

// allowedSecrets are the secrets that may sign an attempt started at t.
func allowedSecrets(h *AuditWebhook, t time.Time) []string {
	var out []string
	for _, s := range h.Secrets {
		if !s.From.After(t) && (s.Until.IsZero() || t.Before(s.Until)) {
			out = append(out, s.Secret)
		}
	}
	return out
}

// checkSignatures verifies Authorization and the Standard Webhooks headers
// of every arrival with the secrets valid when its attempt started.
func (au Audit) checkSignatures(hooks map[string]*AuditWebhook, byID map[string]*DeliveryRecord) CheckResult {
	c := CheckResult{Name: CheckSignatures}
	for i := range au.Arrivals {
		a := &au.Arrivals[i]
		c.Checked++
		h := hooks[a.WebhookID]
		if h == nil {
			c.fail("arrival of %s for unknown webhook %q", a.DeliveryID(), a.WebhookID)
			continue
		}
		at, _ := attemptStart(byID[a.DeliveryID()], a)
		allowed := allowedSecrets(h, at)
		authOK, stdOK := false, false
		for _, s := range allowed {
			authOK = authOK || webhooks.VerifySignature(s, a.Body, a.Header.Get("Authorization"))
			if wh, err := standardwebhooks.NewWebhookRaw([]byte(s)); err == nil {
				stdOK = stdOK || wh.VerifyIgnoringTimestamp(a.Body, a.Header) == nil
			}
		}
		if id := a.Header.Get("Webhook-Id"); id != a.DeliveryID() {
			c.fail("delivery %s attempt %d: webhook-id %q is not its delivery id", a.DeliveryID(), a.Attempt, id)
			continue
		}
		if !authOK || !stdOK {
			c.fail("delivery %s attempt %d of webhook %s (started %s, %d secrets allowed): Authorization valid %t, webhook-signature valid %t; %s",
				a.DeliveryID(), a.Attempt, h.ID, at.Format(time.RFC3339Nano), len(allowed), authOK, stdOK, whichSecret(h, a))
		}
	}
	return c
}

// whichSecret says which of the webhook's secrets did sign the arrival's
// Authorization, for the report.
func whichSecret(h *AuditWebhook, a *Arrival) string {
	for i, s := range h.Secrets {
		if webhooks.VerifySignature(s.Secret, a.Body, a.Header.Get("Authorization")) {
			return fmt.Sprintf("signed with secret %d of %d (valid %s..%s)", i+1, len(h.Secrets), s.From.Format(time.RFC3339Nano), s.Until.Format(time.RFC3339Nano))
		}
	}
	return "signed with none of the webhook's secrets"
}

// checkDeactivated: nothing reaches a webhook between its deactivation's
// answer and its reactivation's request, except attempts whose record
// says they started before the answer.
func (au Audit) checkDeactivated(hooks map[string]*AuditWebhook, byID map[string]*DeliveryRecord) CheckResult {
	c := CheckResult{Name: CheckDeactivated}
	for _, h := range au.Webhooks {
		c.Checked += len(h.Inactive)
	}
	for i := range au.Arrivals {
		a := &au.Arrivals[i]
		h := hooks[a.WebhookID]
		if h == nil {
			continue
		}
		for _, s := range h.Inactive {
			if a.At.Before(s.Answered) || (!s.ReactivateRequested.IsZero() && !a.At.Before(s.ReactivateRequested)) {
				continue
			}
			start, recorded := attemptStart(byID[a.DeliveryID()], a)
			if recorded && start.Before(s.Answered) {
				continue // in flight when the deactivation was answered
			}
			c.fail("delivery %s attempt %d reached webhook %s at %s, %s after its deactivation was answered (attempt started %s, recorded %t)",
				a.DeliveryID(), a.Attempt, h.ID, a.At.Format(time.RFC3339Nano), a.At.Sub(s.Answered).Round(time.Millisecond), start.Format(time.RFC3339Nano), recorded)
		}
	}
	return c
}

// checkDuplicates counts redundant successful sends (a delivery answered
// 2xx more than once, or an (event, webhook) delivered under two ids) and
// checks every arrival of a delivery carried the same bytes.
func (au Audit) checkDuplicates(arrivals map[string][]*Arrival) CheckResult {
	c := CheckResult{Name: CheckDuplicates}
	idsOf := map[string]map[string]bool{} // webhook/event -> delivery ids answered 2xx
	byFault := map[string]int{}
	dups := 0
	for id, as := range arrivals {
		c.Checked++
		ok := 0
		for _, a := range as {
			if !bytes.Equal(a.Body, as[0].Body) {
				c.fail("delivery %s: attempt %d carried other bytes than attempt %d", id, a.Attempt, as[0].Attempt)
			}
			if a.WebhookID != as[0].WebhookID || a.EventID != as[0].EventID {
				c.fail("delivery id %s used for %s/%s and %s/%s", id, as[0].WebhookID, as[0].EventID, a.WebhookID, a.EventID)
			}
			if au.success(a) {
				ok++
			}
		}
		if ok > 1 {
			dups += ok - 1
			au.attribute(byFault, as)
			if len(c.Examples) < 8 {
				c.Examples = append(c.Examples, describeArrivals(id, as))
			}
		}
		if ok > 0 {
			key := as[0].WebhookID + "/" + as[0].EventID
			if idsOf[key] == nil {
				idsOf[key] = map[string]bool{}
			}
			idsOf[key][id] = true
		}
	}
	for key, ids := range idsOf {
		if len(ids) > 1 {
			dups += len(ids) - 1
			c.fail("%s delivered under %d delivery ids", key, len(ids))
		}
	}
	ratio := 0.0
	if c.Checked > 0 {
		ratio = float64(dups) / float64(c.Checked)
	}
	c.Note = fmt.Sprintf("%d duplicates of %d deliveries (%.3f%%)", dups, c.Checked, 100*ratio)
	if len(byFault) > 0 {
		kinds := make([]string, 0, len(byFault))
		for k := range byFault {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool { return byFault[kinds[i]] > byFault[kinds[j]] })
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %d", k, byFault[k]))
		}
		c.Note += "; fault under way at the first success: " + strings.Join(parts, ", ")
	}
	if ratio > au.MaxDuplicateRatio {
		c.fail("%d redundant successful sends of %d deliveries: %.3f%% > %.3f%%", dups, c.Checked, 100*ratio, 100*au.MaxDuplicateRatio)
	}
	return c
}

// attribute counts a duplicated delivery against the faults under way
// when its first success arrived, or starting within two seconds after it:
// those that could lose its outcome before it was recorded.
func (au Audit) attribute(byFault map[string]int, as []*Arrival) {
	var first time.Time
	for _, a := range as {
		if au.success(a) && (first.IsZero() || a.At.Before(first)) {
			first = a.At
		}
	}
	seen := map[string]bool{}
	for _, w := range au.Faults {
		if !w.From.After(first.Add(2*time.Second)) && !w.To.Before(first) && !seen[w.Kind] {
			seen[w.Kind] = true
			byFault[w.Kind]++
		}
	}
	if len(seen) == 0 {
		byFault["none"]++
	}
}

// checkConsistency: each record counts every attempt number its receiver
// saw (a number sent twice, its first outcome lost with a killed worker,
// is one attempt: checkFailedSends and the duplicate check judge those), a
// succeeded one was answered 2xx, and nothing arrived unrecorded.
func (au Audit) checkConsistency(byID map[string]*DeliveryRecord, arrivals map[string][]*Arrival) CheckResult {
	c := CheckResult{Name: CheckConsistency}
	for _, r := range au.Records {
		as := arrivals[r.ID]
		c.Checked++
		if n := highestAttempt(as); n > r.AttemptCount {
			c.fail("delivery %s (%s) counts %d attempts, the receiver saw attempt %d", r.ID, r.Status, r.AttemptCount, n)
		}
		if r.Status == "succeeded" && len(as) > 0 && !received2xx(as) {
			c.fail("delivery %s is recorded succeeded but the receiver never answered it 2xx (%d arrivals)", r.ID, len(as))
		}
		// A delivery retried before its webhook was deactivated ends
		// skipped after arrivals, but none of them was a success.
		if r.Status != "succeeded" && au.receivedSuccess(as) {
			c.fail("delivery %s is recorded %s after %d attempts (recorded: %s) but the receiver answered it 2xx: %s",
				r.ID, r.Status, r.AttemptCount, describeRecorded(r), describeArrivals(r.ID, as))
		}
	}
	ids := make([]string, 0, len(arrivals))
	for id := range arrivals {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if byID[id] == nil {
			c.fail("delivery %s arrived %d times but has no record", id, len(arrivals[id]))
		}
	}
	return c
}

// highestAttempt is the highest attempt number among a delivery's arrivals.
func highestAttempt(as []*Arrival) int {
	n := 0
	for _, a := range as {
		n = max(n, a.Attempt)
	}
	return n
}
