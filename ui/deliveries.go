package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// recentDeliveriesShown is how many deliveries the webhook page lists.
const recentDeliveriesShown = 10

// deliveryRow is one line of Recent Deliveries.
type deliveryRow struct {
	deliveries.Delivery
	// Duration is the last attempt's request time ("—" before any).
	Duration string
	// NextProbeAt is when the open breaker that holds the delivery probes
	// the endpoint next (nil: not held, or its breaker is not known open).
	NextProbeAt *time.Time
}

// StatusClass colours the status badge.
func (d deliveryRow) StatusClass() string {
	switch d.Status {
	case deliveries.StatusSucceeded:
		return "badge-ok"
	case deliveries.StatusFailed:
		return "badge-bad"
	case deliveries.StatusPending, deliveries.StatusRetrying:
		return "badge-warn"
	default:
		return "badge-off"
	}
}

// StatusLabel is the status badge's text: "held" for a delivery that
// waits on its webhook's open breaker (its status stays pending or
// retrying), so nobody expects its next attempt on schedule.
func (d deliveryRow) StatusLabel() string {
	if d.OnHold() {
		return "held"
	}
	return d.Status
}

// OnHold: the delivery waits on its webhook's open breaker and is still to go.
func (d deliveryRow) OnHold() bool {
	return d.Held && (d.Status == deliveries.StatusPending || d.Status == deliveries.StatusRetrying)
}

// NextAttempt says when a retrying delivery's next attempt is due, for
// people ("2 Jan 2006, 15:04:05 UTC (in 5 min)"): "" for any other status,
// and for a held delivery, which has no attempt due (NextProbe says what
// it waits for). A time already past means the attempt is due or under way.
func (d deliveryRow) NextAttempt() string {
	if d.OnHold() {
		return ""
	}
	return nextAttempt(d.Delivery, time.Now())
}

// NextProbe says, for a held delivery, when the breaker probes the
// endpoint next, in NextAttempt's form: "" when not held or not known.
func (d deliveryRow) NextProbe() string {
	if !d.OnHold() || d.NextProbeAt == nil {
		return ""
	}
	return dueAt(*d.NextProbeAt, time.Now())
}

func nextAttempt(d deliveries.Delivery, now time.Time) string {
	if d.Status != deliveries.StatusRetrying || d.NextAttemptAt == nil {
		return ""
	}
	return dueAt(*d.NextAttemptAt, now)
}

func dueAt(at, now time.Time) string {
	wait := at.Sub(now)
	if wait <= 0 {
		return "due now"
	}
	return fmt.Sprintf("%s (in %s)", timestamp(at), roughDuration(wait))
}

// waitNote is what the status column says under the badge of a delivery
// still to go. Short, so the column stays narrow: the exact time is At,
// shown on hover.
type waitNote struct {
	Text string
	At   *time.Time
}

// Wait is the row's waitNote, nil when it waits for nothing.
func (d deliveryRow) Wait() *waitNote {
	return wait(d, time.Now())
}

func wait(d deliveryRow, now time.Time) *waitNote {
	what, at := "next attempt", d.NextAttemptAt
	switch {
	case d.OnHold() && d.NextProbeAt == nil:
		return &waitNote{Text: "until the endpoint answers"}
	case d.OnHold():
		what, at = "next probe", d.NextProbeAt
	case d.Status != deliveries.StatusRetrying || at == nil:
		return nil
	}
	if !at.After(now) {
		return &waitNote{Text: what + " due now", At: at}
	}
	return &waitNote{Text: what + " in " + roughDuration(at.Sub(now)), At: at}
}

// showProbes tells the view's held rows when b, their webhook's breaker,
// probes next; a breaker closed since the rows were read tells them nothing.
func (v *deliveriesView) showProbes(b deliveries.BreakerState, now time.Time) {
	if v == nil || !b.Held {
		return
	}
	for i := range v.Items {
		if v.Items[i].Held {
			v.Items[i].NextProbeAt = probeTime(b, now)
		}
	}
}

// probeTime is when an open breaker probes next: now when it is due.
func probeTime(b deliveries.BreakerState, now time.Time) *time.Time {
	if b.NextProbeAt != nil && b.NextProbeAt.After(now) {
		return b.NextProbeAt
	}
	return &now
}

// roughDuration is a wait for people: whole seconds, minutes or hours.
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", max(1, int(d.Round(time.Second).Seconds())))
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute).Minutes()))
	default:
		return fmt.Sprintf("%d h", int(d.Round(time.Hour).Hours()))
	}
}

// deliveriesView is one page of a webhook's Recent Deliveries, newest
// first; ?deliveries=N skips the N newest.
type deliveriesView struct {
	Items      []deliveryRow
	Total      int64
	From, To   int
	Newer      int
	Older      int
	HasNewer   bool
	HasOlder   bool
	ShowsAPage bool
	Status     string // the ?status= filter, "" for all
	Filters    []deliveryFilter
}

// deliveryFilter is one of the status links above Recent Deliveries.
type deliveryFilter struct {
	Label, Status string
	Current       bool
}

// deliveryFilters are the statuses Recent Deliveries can be narrowed to.
var deliveryFilters = []deliveryFilter{
	{Label: "All"},
	{Label: "Failed", Status: deliveries.StatusFailed},
	{Label: "Retrying", Status: deliveries.StatusRetrying},
	{Label: "Succeeded", Status: deliveries.StatusSucceeded},
	{Label: "Skipped", Status: deliveries.StatusSkipped},
}

// testResultView is the endpoint's answer to a test delivery.
type testResultView struct {
	OK         bool
	StatusCode int
	Error      string
	DeliveryID string
}

// deliveryRoutes lists the delivery pages under a webhook's path.
func (s *Server) deliveryRoutes(webhook string) {
	if s.deliveries == nil {
		return
	}
	s.mux.Handle("POST "+webhook+"/test", s.page(s.testWebhook))
	s.mux.Handle("GET "+webhook+"/deliveries/{delivery_id}", s.page(s.deliveryDetail))
	s.mux.Handle("POST "+webhook+"/deliveries/{delivery_id}/retry", s.page(s.retryDelivery))
	s.mux.Handle("GET "+webhook+"/replay", s.page(s.replayConfirm))
	s.mux.Handle("POST "+webhook+"/replay", s.page(s.replay))
}

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return "< 1 ms"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// recentDeliveries returns the webhook's newest deliveries.
func (s *Server) recentDeliveries(r *http.Request, wh deliveryreads.Webhook) (*deliveriesView, error) {
	offset, _ := strconv.Atoi(r.URL.Query().Get("deliveries"))
	offset = min(max(offset, 0), math.MaxInt32-recentDeliveriesShown)
	status := r.URL.Query().Get("status")
	if !slices.Contains(deliveries.Statuses, status) {
		status = ""
	}
	list, total, err := s.reads.ListDeliveries(r.Context(), wh, deliveries.ListFilter{Limit: recentDeliveriesShown, Offset: offset, Status: status})
	if err != nil {
		return nil, err
	}
	v := &deliveriesView{
		Total: total, Items: make([]deliveryRow, 0, len(list)),
		From: offset + 1, To: offset + len(list),
		Newer: max(0, offset-recentDeliveriesShown), Older: offset + recentDeliveriesShown,
		HasNewer: offset > 0,
	}
	v.HasOlder = int64(v.To) < total
	v.ShowsAPage = v.HasNewer || v.HasOlder
	v.Status = status
	for _, f := range deliveryFilters {
		f.Current = f.Status == status
		v.Filters = append(v.Filters, f)
	}
	for _, d := range list {
		row := deliveryRow{Delivery: d, Duration: "—"}
		if d.AttemptCount > 0 {
			row.Duration = formatDuration(d.LastDuration)
		}
		v.Items = append(v.Items, row)
	}
	return v, nil
}

// testWebhook sends a test delivery through the same service as GET
// .../test, then redirects to the webhook page, which shows the endpoint's
// answer from the delivery record (so a reload does not send another test).
func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	res, err := s.deliveries.Test(r.Context(), a.Account().ID, sub.ID)
	if webhooks.ErrorCode(err) == webhooks.EUNAVAILABLE {
		s.logger.ErrorContext(r.Context(), "test delivery from UI", "webhook_id", sub.ID, "error", err.Error())
		v, verr := s.detailView(r, sess, a, sub)
		if verr != nil {
			return verr
		}
		v.Test = &testResultView{Error: webhooks.ErrorMessage(err)}
		return s.render(w, r, http.StatusServiceUnavailable, "webhook", sess, v)
	} else if err != nil {
		return err
	}
	http.Redirect(w, r, webhookPath(a.Account().ID, sub.ID)+"?tested="+url.QueryEscape(res.DeliveryID), http.StatusSeeOther)
	return nil
}

// testResult reads the outcome of the test delivery named by ?tested=, if
// it is one of this webhook's.
func (s *Server) testResult(r *http.Request, wh deliveryreads.Webhook) (*testResultView, error) {
	id := r.URL.Query().Get("tested")
	if !webhooks.IsDeliveryID(id) {
		return nil, nil
	}
	d, err := s.reads.Delivery(r.Context(), wh, id)
	if webhooks.ErrorCode(err) == webhooks.ENOTFOUND || (err == nil && !d.IsTest) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &testResultView{
		OK: d.Status == deliveries.StatusSucceeded, StatusCode: d.LastStatusCode, Error: d.LastError, DeliveryID: d.ID,
	}, nil
}

type deliveryDetailView struct {
	layoutView
	CanWrite bool
	Sub      webhooks.Subscription
	Delivery deliveryRow
	Body     string // formatted for reading
	RawBody  string // the exact bytes sent and signed
	// WorkflowURL opens, in the Temporal Web UI, the shard or lane run whose history
	// holds the delivery's last attempt ("" when no Web UI is configured).
	WorkflowURL string
}

// workflowURL is a run's history page in the Temporal Web UI.
func (s *Server) workflowURL(d deliveries.Delivery) string {
	if s.temporalWebUI == "" || d.WorkflowID == "" || d.WorkflowRunID == "" {
		return ""
	}
	return s.temporalWebUI + "/namespaces/" + url.PathEscape(s.namespace) + "/workflows/" +
		url.PathEscape(d.WorkflowID) + "/" + url.PathEscape(d.WorkflowRunID) + "/history"
}

func (s *Server) loadDelivery(r *http.Request, sess *session, write bool) (subscriptions.Access, webhooks.Subscription, deliveries.Delivery, error) {
	a, sub, wh, err := s.loadWebhookDeliveries(r, sess, write)
	if err != nil {
		return subscriptions.Access{}, webhooks.Subscription{}, deliveries.Delivery{}, err
	}
	id := r.PathValue("delivery_id")
	if !webhooks.IsDeliveryID(id) {
		return subscriptions.Access{}, webhooks.Subscription{}, deliveries.Delivery{}, webhooks.Errorf(webhooks.ENOTFOUND, "Delivery not found.")
	}
	d, err := s.reads.Delivery(r.Context(), wh, id)
	return a, sub, d, err
}

// deliveryDetail shows one delivery: its attempts and the body sent.
func (s *Server) deliveryDetail(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, d, err := s.loadDelivery(r, sess, false)
	if err != nil {
		return err
	}
	acct := a.Account()
	row := deliveryRow{Delivery: d, Duration: "—"}
	if n := len(d.Attempts); n > 0 {
		row.Duration = formatDuration(d.Attempts[n-1].Duration)
	}
	if d.Held && s.incidents != nil {
		b, err := s.incidents.Breaker(r.Context(), a, sub.ID)
		if err != nil {
			return err
		}
		if b.Open {
			row.NextProbeAt = probeTime(b, s.now())
		}
	}
	v := &deliveryDetailView{
		layoutView: s.layout(sess, "Delivery "+d.ID, &acct, "webhooks"),
		CanWrite:   a.WriteErr() == nil, Sub: sub, Delivery: row, RawBody: string(d.Payload), Body: string(d.Payload),
		WorkflowURL: s.workflowURL(d),
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, d.Payload, "", "  ") == nil {
		v.Body = pretty.String()
	}
	return s.render(w, r, http.StatusOK, "delivery", sess, v)
}

// retryDelivery sends the exact recorded body again as a new delivery, like
// POST .../deliveries/{id}/retry.
func (s *Server) retryDelivery(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, d, err := s.loadDelivery(r, sess, true)
	if err != nil {
		return err
	}
	if _, err := s.deliveries.Redeliver(r.Context(), a.Account().ID, sub.ID, d.ID); err != nil {
		if webhooks.ErrorCode(err) == webhooks.EUNAVAILABLE {
			s.logger.ErrorContext(r.Context(), "redeliver from UI", "delivery_id", d.ID, "error", err.Error())
		}
		return err
	}
	http.Redirect(w, r, webhookPath(a.Account().ID, sub.ID)+"?done=retried", http.StatusSeeOther)
	return nil
}

// attemptOutcome describes an attempt for people.
func attemptOutcome(a deliveries.Attempt) string {
	if a.LateStatusCode != 0 {
		msg := a.ErrorMessage
		if msg == "" {
			msg = a.ErrorKind
		}
		return fmt.Sprintf("%s; answered %d after %.1f s (late)", msg, a.LateStatusCode, a.LateAfter.Seconds())
	}
	if a.ErrorMessage != "" {
		return a.ErrorMessage
	}
	if a.ErrorKind != "" {
		return a.ErrorKind
	}
	return ""
}
