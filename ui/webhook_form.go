package ui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jobhooks/jobhooks"
)

// eventTypeOption is one checkbox of the event types field.
type eventTypeOption struct {
	Value, Label, Help string
}

var eventTypeOptions = []eventTypeOption{
	{webhooks.EventRunStarted, "Run started", "When a run starts."},
	{webhooks.EventRunCompleted, "Run completed", "When a run has finished, successfully or not, and its artifacts are available."},
	{webhooks.EventRunErrored, "Run errored", "As soon as a run errors; its artifacts may not be available yet."},
}

// webhookForm is the Create New Webhook and edit form, as typed.
type webhookForm struct {
	Name        string
	Description string
	ClientURL   string
	EventTypes  []string
	JobIDs      string // as typed: ids separated by commas or spaces
	Active      bool
}

type webhookFormView struct {
	layoutView
	Editing    bool
	Action     string
	CancelURL  string
	SubID      string
	Form       webhookForm
	Errors     fieldErrors
	EventTypes []eventTypeOption
}

func formOf(sub webhooks.Subscription) webhookForm {
	ids := make([]string, 0, len(sub.JobIDs))
	for _, id := range sub.JobIDs {
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	return webhookForm{
		Name: sub.Name, Description: sub.Description, ClientURL: sub.ClientURL,
		EventTypes: sub.EventTypes, JobIDs: strings.Join(ids, ", "), Active: sub.Active,
	}
}

// readWebhookForm reads the posted form. Only job_ids can fail here; the
// rest is checked by the same domain validation the API uses.
func readWebhookForm(form url.Values) (webhookForm, []int64, error) {
	f := webhookForm{
		Name:        strings.TrimSpace(form.Get("name")),
		Description: strings.TrimSpace(strings.ReplaceAll(form.Get("description"), "\r\n", "\n")),
		ClientURL:   strings.TrimSpace(form.Get("client_url")),
		EventTypes:  form["event_types"],
		JobIDs:      strings.TrimSpace(form.Get("job_ids")),
		Active:      form.Get("active") == "true",
	}
	if f.EventTypes == nil {
		f.EventTypes = []string{}
	}
	ids := []int64{}
	for i, part := range strings.FieldsFunc(f.JobIDs, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
		id, err := strconv.ParseInt(part, 10, 64)
		if err != nil || id <= 0 {
			return f, nil, webhooks.FieldErrorf("job_ids", "Job id %d, %q, is not a job id: use positive whole numbers separated by commas.", i+1, part)
		}
		ids = append(ids, id)
	}
	return f, ids, nil
}

func (s *Server) formView(sess *session, a access, title string) *webhookFormView {
	acct := a.membership.Account
	return &webhookFormView{
		layoutView: s.layout(sess, title, &acct, "webhooks"),
		Errors:     fieldErrors{}, EventTypes: eventTypeOptions,
		Action: webhooksPath(acct.ID), CancelURL: webhooksPath(acct.ID),
	}
}

func (s *Server) newWebhookForm(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, true)
	if err != nil {
		return err
	}
	v := s.formView(sess, a, "Create New Webhook")
	v.Form = webhookForm{Active: true, EventTypes: []string{}}
	return s.render(w, r, http.StatusOK, "webhook_form", sess, v)
}

// checkFields puts an error beside every field at fault, so one round trip
// shows them all. Each field goes through the domain validation the API
// uses (an update carrying only that field validates only that field), and
// the endpoint URL through the same destination policy. A non-nil result is
// an error that is not the user's to fix.
func (s *Server) checkFields(r *http.Request, errs fieldErrors, f webhookForm, jobIDs []int64, jobErr error) error {
	checks := []webhooks.SubscriptionUpdate{
		{Name: &f.Name}, {Description: &f.Description}, {ClientURL: &f.ClientURL}, {EventTypes: &f.EventTypes},
	}
	if jobErr != nil {
		errs.addDomainError(jobErr)
	} else {
		checks = append(checks, webhooks.SubscriptionUpdate{JobIDs: &jobIDs})
	}
	for _, c := range checks {
		if err := c.Validate(); err != nil && !errs.addDomainError(err) {
			return err
		}
	}
	if _, bad := errs["client_url"]; !bad {
		if err := s.destinations.CheckURL(r.Context(), f.ClientURL); err != nil && !errs.addDomainError(err) {
			return err
		}
	}
	return nil
}

type webhookCreatedView struct {
	layoutView
	Sub    webhooks.Subscription
	Secret string
}

// createWebhook validates like POST .../webhooks/subscriptions (domain
// validation, then the destination policy) and shows the hmac_secret once.
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, true)
	if err != nil {
		return err
	}
	v := s.formView(sess, a, "Create New Webhook")
	f, jobIDs, jobErr := readWebhookForm(r.PostForm)
	v.Form = f
	sub := webhooks.Subscription{
		AccountID: a.membership.Account.ID, Name: f.Name, Description: f.Description,
		ClientURL: f.ClientURL, EventTypes: f.EventTypes, JobIDs: jobIDs, Active: f.Active,
	}
	if err := s.checkFields(r, v.Errors, f, jobIDs, jobErr); err != nil {
		return err
	}
	if len(v.Errors) == 0 {
		// The whole-subscription rules of the API have the last word.
		if err := sub.Validate(); err != nil && !v.Errors.addDomainError(err) {
			return err
		}
	}
	if len(v.Errors) > 0 {
		return s.render(w, r, http.StatusBadRequest, "webhook_form", sess, v)
	}
	created, secret, err := s.subscriptions.Create(r.Context(), sub)
	if err != nil {
		return err
	}
	acct := a.membership.Account
	cv := &webhookCreatedView{layoutView: s.layout(sess, "Webhook created", &acct, "webhooks"), Sub: created, Secret: secret}
	cv.Flash = "Webhook created."
	return s.render(w, r, http.StatusCreated, "webhook_created", sess, cv)
}

func (s *Server) editWebhookForm(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	v := s.formView(sess, a, "Edit "+sub.Name)
	v.Editing, v.SubID, v.Form = true, sub.ID, formOf(sub)
	v.Action = webhookPath(a.membership.Account.ID, sub.ID)
	v.CancelURL = v.Action
	return s.render(w, r, http.StatusOK, "webhook_form", sess, v)
}

// updateWebhook replaces every field the form shows, with the API's
// validation.
func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	v := s.formView(sess, a, "Edit "+sub.Name)
	v.Editing, v.SubID = true, sub.ID
	v.Action = webhookPath(a.membership.Account.ID, sub.ID)
	v.CancelURL = v.Action
	f, jobIDs, jobErr := readWebhookForm(r.PostForm)
	v.Form = f
	upd := webhooks.SubscriptionUpdate{
		Name: &f.Name, Description: &f.Description, ClientURL: &f.ClientURL,
		EventTypes: &f.EventTypes, JobIDs: &jobIDs, Active: &f.Active,
	}
	if err := s.checkFields(r, v.Errors, f, jobIDs, jobErr); err != nil {
		return err
	}
	if len(v.Errors) == 0 {
		if err := upd.Validate(); err != nil && !v.Errors.addDomainError(err) {
			return err
		}
	}
	if len(v.Errors) > 0 {
		return s.render(w, r, http.StatusBadRequest, "webhook_form", sess, v)
	}
	if _, err := s.subscriptions.Update(r.Context(), a.membership.Account.ID, sub.ID, upd); err != nil {
		return err
	}
	http.Redirect(w, r, v.Action+"?done=saved", http.StatusSeeOther)
	return nil
}
