package ui

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/subscriptions"
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
// rest is checked by the subscription use cases the API calls.
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

func (s *Server) formView(sess *session, a subscriptions.Access, title string) *webhookFormView {
	acct := a.Account()
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

type webhookCreatedView struct {
	layoutView
	Sub    webhooks.Subscription
	Secret string
	// StandardSecret is the same secret for Standard Webhooks libraries.
	StandardSecret string
}

// createWebhook creates through the same use case as POST
// .../webhooks/subscriptions and shows the hmac_secret once. Every problem
// with the form is shown beside its field, all at once.
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, true)
	if err != nil {
		return err
	}
	v := s.formView(sess, a, "Create New Webhook")
	f, jobIDs, formErr := readWebhookForm(r.PostForm)
	v.Form = f
	sub := webhooks.Subscription{
		Name: f.Name, Description: f.Description, ClientURL: f.ClientURL,
		EventTypes: f.EventTypes, JobIDs: jobIDs, Active: f.Active,
	}
	var created webhooks.Subscription
	var secret string
	if formErr != nil {
		// Nothing to store; the rest of the form is checked all the same.
		err = errors.Join(formErr, s.subscriptions.CheckNew(r.Context(), sub))
	} else {
		created, secret, err = s.subscriptions.Create(r.Context(), a, sub)
	}
	if err != nil {
		if !v.Errors.addInvalid(err) {
			return err
		}
		return s.render(w, r, http.StatusBadRequest, "webhook_form", sess, v)
	}
	acct := a.Account()
	cv := &webhookCreatedView{layoutView: s.layout(sess, "Webhook created", &acct, "webhooks"), Sub: created, Secret: secret,
		StandardSecret: webhooks.StandardWebhooksSecret(secret)}
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
	v.Action = webhookPath(a.Account().ID, sub.ID)
	v.CancelURL = v.Action
	return s.render(w, r, http.StatusOK, "webhook_form", sess, v)
}

// updateWebhook replaces every field the form shows, through the same use
// case as PUT .../subscription/{id}.
func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	v := s.formView(sess, a, "Edit "+sub.Name)
	v.Editing, v.SubID = true, sub.ID
	v.Action = webhookPath(a.Account().ID, sub.ID)
	v.CancelURL = v.Action
	f, jobIDs, formErr := readWebhookForm(r.PostForm)
	v.Form = f
	upd := webhooks.SubscriptionUpdate{
		Name: &f.Name, Description: &f.Description, ClientURL: &f.ClientURL,
		EventTypes: &f.EventTypes, JobIDs: &jobIDs, Active: &f.Active,
	}
	if formErr != nil {
		// Nothing to store; the rest of the form is checked all the same.
		upd.JobIDs = nil
		err = errors.Join(formErr, s.subscriptions.CheckUpdate(r.Context(), upd))
	} else {
		_, err = s.subscriptions.Update(r.Context(), a, sub.ID, upd)
	}
	if err != nil {
		if !v.Errors.addInvalid(err) {
			return err
		}
		return s.render(w, r, http.StatusBadRequest, "webhook_form", sess, v)
	}
	http.Redirect(w, r, v.Action+"?done=saved", http.StatusSeeOther)
	return nil
}
