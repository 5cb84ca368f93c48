// Package ui is the web UI served beside the API under /ui: sign-in with an
// API token, Account Settings › Webhooks with Recent Deliveries, and Profile ›
// API Access. Server-rendered HTML that works without JavaScript.
package ui

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// MaxFormBytes is the largest form body the UI reads.
const MaxFormBytes = 1 << 20

// Deps are everything the UI needs, passed in explicitly.
type Deps struct {
	Identity *identity.Store
	// Box seals session cookies (aad "ui-session").
	Box    *secrets.Box
	Logger *slog.Logger
	// PublicBaseURL, when https, makes cookies Secure even behind a proxy
	// that does not say X-Forwarded-Proto.
	PublicBaseURL string
	// Subscriptions backs Account Settings › Webhooks with the use cases
	// the API calls; nil hides those pages.
	Subscriptions *subscriptions.Service
	// Deliveries backs Test, Retry and Send missed deliveries, and
	// DeliveryReads Recent Deliveries, the delivery search and a webhook's
	// health. They come together; nil hides them all.
	Deliveries    *dispatch.Service
	DeliveryReads *deliveryreads.Service
	// DeliverySettings backs a webhook's delivery settings page with the
	// use cases the API calls; nil hides it.
	DeliverySettings *webhooksettings.Service
	// Incidents backs the breaker banner and Probe now, the notices and
	// the notification endpoint page; nil hides them.
	Incidents *incidents.Service
	// Now is the clock (tests may fix it); nil means time.Now.
	Now func() time.Time
	// TemporalWebUI and Namespace, when set, link each delivery to its
	// workflow run in the Temporal Web UI.
	TemporalWebUI string
	Namespace     string
}

// Server is the UI as an http.Handler.
type Server struct {
	identity      *identity.Store
	logger        *slog.Logger
	publicBaseURL string
	subscriptions *subscriptions.Service
	deliveries    *dispatch.Service
	reads         *deliveryreads.Service
	// deliverySettings is nil when the UI has no settings page.
	deliverySettings *webhooksettings.Service
	temporalWebUI    string
	namespace        string
	sessions         sessionCodec
	pages            *pages
	mux              *http.ServeMux
	incidents        *incidents.Service
	now              func() time.Time
}

// New returns the UI. Paths it serves start with /ui.
func New(deps Deps) (*Server, error) {
	if deps.Identity == nil || deps.Box == nil || deps.Logger == nil {
		return nil, errors.New("ui: Identity, Box and Logger are required")
	}
	if (deps.Deliveries == nil) != (deps.DeliveryReads == nil) {
		return nil, errors.New("ui: Deliveries and DeliveryReads go together")
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{
		identity:         deps.Identity,
		logger:           deps.Logger,
		publicBaseURL:    deps.PublicBaseURL,
		subscriptions:    deps.Subscriptions,
		deliveries:       deps.Deliveries,
		reads:            deps.DeliveryReads,
		deliverySettings: deps.DeliverySettings,
		temporalWebUI:    strings.TrimRight(deps.TemporalWebUI, "/"),
		namespace:        deps.Namespace,
		sessions:         sessionCodec{box: deps.Box, now: now},
		pages:            p,
		mux:              http.NewServeMux(),
		incidents:        deps.Incidents,
		now:              now,
	}
	s.routes()
	return s, nil
}

// routes lists every page of the UI. GET pages only read; every POST needs
// a session and its CSRF token (sign-in needs its own pre-session token).
func (s *Server) routes() {
	static, _ := fs.Sub(assets, "assets/static")
	s.mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", staticFiles(static)))
	s.mux.HandleFunc("GET /ui/static", s.notFound) // no directory listing, no redirect

	s.mux.HandleFunc("GET /ui", s.home)
	s.mux.HandleFunc("GET /ui/sign-in", s.signInForm)
	s.mux.HandleFunc("POST /ui/sign-in", s.signIn)
	s.mux.Handle("POST /ui/sign-out", s.page(s.signOut))

	s.mux.Handle("GET /ui/accounts", s.page(s.accountList))
	s.mux.Handle("GET /ui/profile/api-access", s.page(s.apiAccess))
	s.mux.Handle("GET /ui/profile/api-access/rotate", s.page(s.rotateConfirm))
	s.mux.Handle("POST /ui/profile/api-access/rotate", s.page(s.rotateKey))

	s.webhookRoutes()
	s.mux.HandleFunc("/", s.notFound)
}

// ServeHTTP adds the security headers every UI response carries, limits the
// body, and turns a panic into a logged error page.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	defer func() {
		if rec := recover(); rec != nil {
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			s.logger.ErrorContext(r.Context(), "panic in UI handler", "path", r.URL.Path, "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
			s.renderError(w, r, nil, webhooks.Errorf(webhooks.EINTERNAL, "Internal error."))
		}
	}()
	s.mux.ServeHTTP(w, r)
}

// pageFunc is a page for a signed-in browser.
type pageFunc func(w http.ResponseWriter, r *http.Request, sess *session) error

// page wraps a pageFunc: it requires a live session (else sends the browser
// to sign in), checks the CSRF token of every POST, and renders errors.
func (s *Server) page(fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.loadSession(r)
		if errors.Is(err, errNoSession) {
			s.clearCookie(w, r, sessionCookie)
			next := ""
			if r.Method == http.MethodGet {
				next = "?next=" + url.QueryEscape(r.URL.RequestURI())
			}
			http.Redirect(w, r, "/ui/sign-in"+next, http.StatusSeeOther)
			return
		} else if err != nil {
			s.renderError(w, r, nil, err)
			return
		}
		if r.Method == http.MethodPost {
			if err := parseForm(r); err != nil {
				s.renderError(w, r, sess, formError(err))
				return
			}
			if r.MultipartForm != nil {
				defer func() { _ = r.MultipartForm.RemoveAll() }()
			}
			if !validCSRF(r.PostForm.Get(csrfField), sess.csrf) {
				s.renderError(w, r, sess, webhooks.Errorf(webhooks.EFORBIDDEN,
					"This form has expired or did not come from this site. Go back, reload the page and try again."))
				return
			}
		}
		if err := fn(w, r, sess); err != nil {
			s.renderError(w, r, sess, err)
		}
	})
}

// parseForm reads a posted form into r.PostForm: URL-encoded, or
// multipart (a file upload), whose files stay in r.MultipartForm.
func parseForm(r *http.Request) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		return r.ParseMultipartForm(MaxFormBytes)
	}
	return r.ParseForm()
}

// formError turns a form parsing failure into a user-facing error.
func formError(err error) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return webhooks.Errorf(webhooks.ETOOLARGE, "The form is larger than %d bytes.", maxErr.Limit)
	}
	return webhooks.Errorf(webhooks.EINVALID, "The form could not be read.")
}

// home sends the browser to its accounts, or to sign in.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if _, err := s.loadSession(r); err == nil {
		http.Redirect(w, r, "/ui/accounts", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/ui/sign-in", http.StatusSeeOther)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	sess, _ := s.loadSession(r)
	s.renderError(w, r, sess, webhooks.Errorf(webhooks.ENOTFOUND, "There is no page at %s.", r.URL.Path))
}

// accountList lists the accounts the credential belongs to; with only one
// it goes straight to that account's webhooks.
func (s *Server) accountList(w http.ResponseWriter, r *http.Request, sess *session) error {
	ms := sess.principal.Memberships
	if len(ms) == 1 && s.subscriptions != nil {
		http.Redirect(w, r, webhooksPath(ms[0].Account.ID), http.StatusSeeOther)
		return nil
	}
	return s.render(w, r, http.StatusOK, "accounts", sess, &accountsView{
		layoutView:  s.layout(sess, "Accounts", nil, "accounts"),
		HasWebhooks: s.subscriptions != nil,
	})
}

type accountsView struct {
	layoutView
	HasWebhooks bool
}

// localPath returns next when it is a path inside the UI, so a sign-in
// redirect can never send the browser to another site.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/ui") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/accounts"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/ui/accounts"
	}
	return next
}
