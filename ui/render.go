package ui

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jobhooks/jobhooks"
)

//go:embed assets
var assets embed.FS

// pages holds one parsed template set per page: the layout plus the page.
type pages struct {
	byName map[string]*template.Template
}

func parsePages() (*pages, error) {
	files, err := fs.Glob(assets, "assets/templates/page_*.html")
	if err != nil {
		return nil, fmt.Errorf("ui templates: %w", err)
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "assets/templates/page_"), ".html")
		t, err := template.New("layout.html").Funcs(templateFuncs).ParseFS(assets, "assets/templates/layout.html", f)
		if err != nil {
			return nil, fmt.Errorf("ui template %s: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

var templateFuncs = template.FuncMap{
	"timestamp": timestamp,
	// shortTime is for tables; the full UTC time is in its title.
	"shortTime": func(t time.Time) string { return t.UTC().Format("2 Jan 15:04:05") },
	"jobs": func(ids []int64) string {
		if len(ids) == 0 {
			return "All jobs"
		}
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = strconv.FormatInt(id, 10)
		}
		return strings.Join(parts, ", ")
	},
	"join":           strings.Join,
	"attemptOutcome": attemptOutcome,
	"duration":       formatDuration,
	// statusClass colours an HTTP status code: 2xx good, others bad, 0 never.
	"statusClass": func(code int) string {
		switch {
		case code == 0:
			return "muted"
		case code >= 200 && code < 300:
			return "ok"
		default:
			return "bad"
		}
	},
	"statusText": func(code int) string {
		if code == 0 {
			return "—"
		}
		if t := http.StatusText(code); t != "" {
			return strconv.Itoa(code) + " " + t
		}
		return strconv.Itoa(code)
	},
	"contains": func(list []string, v string) bool {
		for _, x := range list {
			if x == v {
				return true
			}
		}
		return false
	},
}

// timestamp renders a time.Time or *time.Time for people, "—" when unset.
func timestamp(v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x != nil {
			t = *x
		}
	}
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2 Jan 2006, 15:04:05 UTC")
}

// layoutView is what the layout of every page needs.
type layoutView struct {
	Title     string
	Nav       string // which navigation entry is current
	SignedIn  bool
	CSRF      string
	IsUser    bool   // signed in with a personal key (else a service token)
	Who       string // the user's email, or `Service token "ci"`
	Accounts  []webhooks.Account
	Account   *webhooks.Account // the account the page is about, if any
	Flash     string
	ShowHooks bool
}

func (s *Server) layout(sess *session, title string, account *webhooks.Account, nav string) layoutView {
	v := layoutView{Title: title, Nav: nav, Account: account, ShowHooks: s.subscriptions != nil}
	if sess == nil {
		return v
	}
	v.SignedIn = true
	v.CSRF = sess.csrf
	p := sess.principal
	v.IsUser = p.Kind == webhooks.PrincipalUser
	if v.IsUser {
		v.Who = p.Name
	} else {
		v.Who = fmt.Sprintf("Service token %q", p.Name)
	}
	for _, m := range p.Memberships {
		v.Accounts = append(v.Accounts, m.Account)
	}
	return v
}

// render writes page name with data. Pages can show secrets (new keys, new
// hmac_secrets), so nothing the UI renders is cached.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, sess *session, data any) error {
	t, ok := s.pages.byName[name]
	if !ok {
		return fmt.Errorf("render: no page %q", name)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
	return nil
}

type errorView struct {
	layoutView
	Code    int
	Heading string
	Message string
}

// renderError shows err as a page. Internal errors are logged and shown
// only as a generic message.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, sess *session, err error) {
	code := webhooks.ErrorCode(err)
	status := webhooks.HTTPStatus(code)
	if code == webhooks.EINTERNAL {
		s.logger.ErrorContext(r.Context(), "internal error in UI", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	}
	v := &errorView{
		layoutView: s.layout(sess, http.StatusText(status), nil, ""),
		Code:       status, Heading: http.StatusText(status), Message: webhooks.ErrorMessage(err),
	}
	if rerr := s.render(w, r, status, "error", sess, v); rerr != nil {
		s.logger.ErrorContext(r.Context(), "render error page", "error", rerr.Error())
		http.Error(w, v.Message, status)
	}
}

// staticFiles serves the embedded CSS and JavaScript.
func staticFiles(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") || r.URL.Path == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		files.ServeHTTP(w, r)
	})
}

// fieldErrors collects per-field messages for a form.
type fieldErrors map[string]string

// addInvalid puts every problem with the input that err holds (an EINVALID
// error, webhooks.Problems, or several joined) beside its field. It returns
// false if err holds anything else, which is not the user's to fix.
func (fe fieldErrors) addInvalid(err error) bool {
	if many, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range many.Unwrap() {
			if !fe.addInvalid(e) {
				return false
			}
		}
		return true
	}
	var e *webhooks.Error
	if !errors.As(err, &e) || e.Code != webhooks.EINVALID {
		return false
	}
	if _, seen := fe[e.Field]; !seen {
		fe[e.Field] = e.Message
	}
	return true
}
