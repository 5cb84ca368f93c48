package ui

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// blankHeaderRows is how many empty header rows the form offers (up to
// webhooksettings.MaxHeaders in all).
const blankHeaderRows = 3

func deliverySettingsPath(accountID int64, id string) string {
	return webhookPath(accountID, id) + "/delivery-settings"
}

// deliverySettingsRoutes lists the delivery settings pages of a webhook.
func (s *Server) deliverySettingsRoutes(base string) {
	if s.deliverySettings == nil {
		return
	}
	s.mux.Handle("GET "+base+"/delivery-settings", s.page(s.deliverySettingsPage))
	s.mux.Handle("POST "+base+"/delivery-settings", s.page(s.saveDeliverySettings))
	s.mux.Handle("POST "+base+"/delivery-settings/certificate", s.page(s.uploadClientCertificate))
	s.mux.Handle("POST "+base+"/delivery-settings/certificate/remove", s.page(s.removeClientCertificate))
	s.mux.Handle("POST "+base+"/delivery-settings/format", s.page(s.saveDeliveryFormat))
	s.mux.Handle("POST "+base+"/delivery-settings/filter-check", s.page(s.checkDeliveryFilter))
}

// Messages a redirect may ask the settings page to show.
var deliverySettingsFlashes = map[string]string{
	"saved":       "Your changes were saved. Deliveries use them within a second.",
	"certificate": "The client certificate was saved. Deliveries present it within a second.",
	"removed":     "The client certificate was removed.",
	"format":      "The format, notifications and filter were saved.",
}

// headerRow is one row of the headers form. A stored secret shows no
// value: left empty, it keeps the stored one.
type headerRow struct {
	N            int
	Name, Value  string
	Secret       bool
	StoredSecret bool
}

type deliverySettingsView struct {
	layoutView
	CanWrite    bool
	ReadOnlyWhy string
	Sub         webhooks.Subscription
	Settings    webhooksettings.Settings
	Rate        string // as typed
	Rows        []headerRow
	Errors      fieldErrors
	MaxHeaders  int
	// OnOutage is the form's choice: "" (the service's default,
	// DefaultOnOutage), "retry" or "hold".
	OnOutage        string
	DefaultOnOutage string
	// Format is the format, notifications, filter and routing key form.
	Format formatForm
}

// invalidSettingsView is the settings page again, with the field problems
// of err (a refused change) shown; an err that names no field is returned
// as it is.
func (s *Server) invalidSettingsView(r *http.Request, sess *session, a subscriptions.Access, sub webhooks.Subscription, err error) (*deliverySettingsView, error) {
	v, verr := s.settingsView(r, sess, a, sub)
	if verr != nil {
		return nil, verr
	}
	if !v.Errors.addInvalid(err) {
		return nil, err
	}
	return v, nil
}

// settingsView is the page for sub with its stored settings, the form
// filled from them.
func (s *Server) settingsView(r *http.Request, sess *session, a subscriptions.Access, sub webhooks.Subscription) (*deliverySettingsView, error) {
	st, err := s.deliverySettings.Get(r.Context(), a, sub.ID)
	if err != nil {
		return nil, err
	}
	acct := a.Account()
	v := &deliverySettingsView{
		layoutView: s.layout(sess, "Delivery settings of "+sub.Name, &acct, "webhooks"),
		CanWrite:   a.WriteErr() == nil, ReadOnlyWhy: webhooks.ErrorMessage(a.WriteErr()),
		Sub: sub, Settings: st, Errors: fieldErrors{}, MaxHeaders: webhooksettings.MaxHeaders,
		DefaultOnOutage: s.deliverySettings.DefaultOnOutage(), Format: formatFormOf(st),
	}
	if !st.OnOutageIsDefault {
		v.OnOutage = st.OnOutage
	}
	if st.MaxRequestsPerSecond != nil {
		v.Rate = strconv.FormatFloat(*st.MaxRequestsPerSecond, 'f', -1, 64)
	}
	for i, h := range st.Headers {
		v.Rows = append(v.Rows, headerRow{N: i, Name: h.Name, Value: h.Value, Secret: h.Secret, StoredSecret: h.Secret})
	}
	v.Rows = withBlankRows(v.Rows)
	return v, nil
}

// withBlankRows adds the empty rows a new header goes in.
func withBlankRows(rows []headerRow) []headerRow {
	for n, end := len(rows), min(len(rows)+blankHeaderRows, webhooksettings.MaxHeaders); n < end; n++ {
		rows = append(rows, headerRow{N: n})
	}
	return rows
}

func (s *Server) deliverySettingsPage(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, false)
	if err != nil {
		return err
	}
	v, err := s.settingsView(r, sess, a, sub)
	if err != nil {
		return err
	}
	v.Flash = deliverySettingsFlashes[r.URL.Query().Get("done")]
	return s.render(w, r, http.StatusOK, "webhook_delivery_settings", sess, v)
}

// readHeaderRows reads the posted header rows: rows with neither name nor
// value, or marked for removal, are dropped. It returns the rows as typed
// (for the form again) and, for each header kept, its row number.
func readHeaderRows(form url.Values) ([]headerRow, []webhooksettings.HeaderInput, []int) {
	count, _ := strconv.Atoi(form.Get("header_rows"))
	count = min(max(count, 0), webhooksettings.MaxHeaders)
	var (
		rows   []headerRow
		inputs []webhooksettings.HeaderInput
		rowOf  []int
	)
	for n := range count {
		key := func(field string) string { return fmt.Sprintf("header_%s_%d", field, n) }
		row := headerRow{N: len(rows), Name: strings.TrimSpace(form.Get(key("name"))), Value: form.Get(key("value")),
			Secret: form.Get(key("secret")) == "true", StoredSecret: form.Get(key("stored_secret")) == "true"}
		if form.Get(key("remove")) == "true" || (row.Name == "" && row.Value == "") {
			continue
		}
		in := webhooksettings.HeaderInput{Name: row.Name, Secret: row.Secret}
		if row.Value != "" || !row.Secret {
			v := row.Value
			in.Value = &v
		}
		rows = append(rows, row)
		inputs = append(inputs, in)
		rowOf = append(rowOf, row.N)
	}
	return rows, inputs, rowOf
}

// saveDeliverySettings saves the rate limit, the headers and what
// deliveries do during an outage through the same use case as PUT
// .../delivery-settings, keeping the certificate.
// Every problem is shown beside its field.
func (s *Server) saveDeliverySettings(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	rows, headers, rowOf := readHeaderRows(r.PostForm)
	rateText := strings.TrimSpace(r.PostFormValue("max_requests_per_second"))
	u := webhooksettings.Update{Rate: &webhooksettings.Rate{}, Headers: &headers}
	onOutage, choseOnOutage := r.PostForm["on_outage"]
	if choseOnOutage {
		u.OnOutage = &webhooksettings.OnOutage{}
		if m := strings.TrimSpace(onOutage[0]); m != "" {
			u.OnOutage.Mode = &m
		}
	}
	var formErr error
	if rateText != "" {
		v, err := strconv.ParseFloat(rateText, 64)
		if err != nil {
			formErr = webhooks.FieldErrorf("max_requests_per_second",
				"Enter a number of requests a second, such as 10 or 0.5, or leave it empty for no limit.")
		}
		u.Rate.MaxRequestsPerSecond = &v
	}
	if formErr == nil {
		_, err = s.deliverySettings.Update(r.Context(), a, sub.ID, u)
	} else {
		// Nothing to store; the headers are checked all the same.
		u.Rate = nil
		err = errors.Join(formErr, u.Problems(time.Now()).Err())
	}
	if err == nil {
		http.Redirect(w, r, deliverySettingsPath(a.Account().ID, sub.ID)+"?done=saved", http.StatusSeeOther)
		return nil
	}
	v, err := s.invalidSettingsView(r, sess, a, sub, err)
	if err != nil {
		return err
	}
	v.Errors = rowErrors(v.Errors, rowOf)
	for i := range rows {
		if rows[i].Secret {
			rows[i].Value = "" // a typed secret is not sent back to the browser
		}
	}
	v.Rate, v.Rows = rateText, withBlankRows(rows)
	if choseOnOutage {
		v.OnOutage = onOutage[0]
	}
	return s.render(w, r, http.StatusBadRequest, "webhook_delivery_settings", sess, v)
}

// rowErrors renames the errors of headers[i] to the form row they came
// from (header_name_N, header_value_N).
func rowErrors(fe fieldErrors, rowOf []int) fieldErrors {
	out := fieldErrors{}
	for field, msg := range fe {
		var i int
		var member string
		if n, _ := fmt.Sscanf(field, "headers[%d].%s", &i, &member); n == 2 && i < len(rowOf) {
			field = fmt.Sprintf("header_%s_%d", member, rowOf[i])
		}
		out[field] = msg
	}
	return out
}

// uploadClientCertificate sets the client certificate from two uploaded
// PEM files (multipart form), keeping the rest of the settings.
func (s *Server) uploadClientCertificate(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	certPEM, certErr := uploaded(r, "certificate", "client_certificate.certificate", webhooksettings.MaxCertificatePEMBytes)
	keyPEM, keyErr := uploaded(r, "private_key", "client_certificate.private_key", webhooksettings.MaxPrivateKeyPEMBytes)
	if err = errors.Join(certErr, keyErr); err == nil {
		_, err = s.deliverySettings.Update(r.Context(), a, sub.ID, webhooksettings.Update{
			Certificate: &webhooksettings.CertificateInput{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM},
		})
	}
	if err == nil {
		s.logger.InfoContext(r.Context(), "webhook client certificate set", "account_id", a.Account().ID, "subscription_id", sub.ID)
		http.Redirect(w, r, deliverySettingsPath(a.Account().ID, sub.ID)+"?done=certificate", http.StatusSeeOther)
		return nil
	}
	v, err := s.invalidSettingsView(r, sess, a, sub, err)
	if err != nil {
		return err
	}
	return s.render(w, r, http.StatusBadRequest, "webhook_delivery_settings", sess, v)
}

// uploaded reads the file of a multipart form field, at most limit bytes.
func uploaded(r *http.Request, name, field string, limit int) (string, error) {
	f, _, err := r.FormFile(name)
	if errors.Is(err, http.ErrMissingFile) || errors.Is(err, http.ErrNotMultipart) {
		return "", webhooks.FieldErrorf(field, "Choose the file to upload.")
	} else if err != nil {
		return "", webhooks.FieldErrorf(field, "The file could not be read.")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	switch {
	case err != nil:
		return "", webhooks.FieldErrorf(field, "The file could not be read.")
	case len(b) > limit:
		return "", webhooks.FieldErrorf(field, "The file is larger than %d bytes.", limit)
	case len(b) == 0:
		return "", webhooks.FieldErrorf(field, "The file is empty.")
	}
	return string(b), nil
}

func (s *Server) removeClientCertificate(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	if _, err := s.deliverySettings.Update(r.Context(), a, sub.ID, webhooksettings.Update{
		Certificate: &webhooksettings.CertificateInput{Remove: true},
	}); err != nil {
		return err
	}
	s.logger.InfoContext(r.Context(), "webhook client certificate removed", "account_id", a.Account().ID, "subscription_id", sub.ID)
	http.Redirect(w, r, deliverySettingsPath(a.Account().ID, sub.ID)+"?done=removed", http.StatusSeeOther)
	return nil
}
