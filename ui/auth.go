package ui

import (
	"net/http"
	"strings"
	"time"

	"github.com/jobhooks/jobhooks"
)

type signInView struct {
	layoutView
	SignInCSRF string
	Next       string
	TokenError string
	SignedOut  bool
}

// signInForm shows the token form. Before a session exists there is no
// session cookie to bind a CSRF token to, so the form carries a random token
// that must match a short-lived cookie (double submit), which stops another
// site from signing the browser in with the attacker's credential.
func (s *Server) signInForm(w http.ResponseWriter, r *http.Request) {
	if _, err := s.loadSession(r); err == nil {
		http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	s.showSignIn(w, r, http.StatusOK, "", r.URL.Query().Has("signed_out"))
}

func (s *Server) showSignIn(w http.ResponseWriter, r *http.Request, code int, tokenError string, signedOut bool) {
	pre := randomToken()
	s.setCookie(w, r, signInCSRFCookie, pre, time.Hour)
	v := &signInView{
		layoutView: s.layout(nil, "Sign in", nil, ""),
		SignInCSRF: pre, Next: localPath(r.FormValue("next")), TokenError: tokenError, SignedOut: signedOut,
	}
	if err := s.render(w, r, code, "sign_in", nil, v); err != nil {
		s.renderError(w, r, nil, err)
	}
}

// signIn checks the token with the same authentication as the API and, when
// it is valid, keeps it sealed in the session cookie.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.renderError(w, r, nil, formError(err))
		return
	}
	pre, err := r.Cookie(signInCSRFCookie)
	if err != nil || !validCSRF(r.PostForm.Get(csrfField), pre.Value) {
		s.showSignIn(w, r, http.StatusForbidden, "The sign-in form expired. Please paste your token again.", false)
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	if token == "" {
		s.showSignIn(w, r, http.StatusBadRequest, "Paste an API token: your personal API key or a service token.", false)
		return
	}
	if _, err := s.identity.Authenticate(r.Context(), token); err != nil {
		if webhooks.ErrorCode(err) == webhooks.EUNAUTHORIZED {
			s.showSignIn(w, r, http.StatusUnauthorized, "This token is not valid. It may have been rotated or revoked.", false)
			return
		}
		s.renderError(w, r, nil, err)
		return
	}
	s.clearCookie(w, r, signInCSRFCookie)
	s.startSession(w, r, token)
	http.Redirect(w, r, localPath(r.PostForm.Get("next")), http.StatusSeeOther)
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request, _ *session) error {
	s.clearCookie(w, r, sessionCookie)
	http.Redirect(w, r, "/ui/sign-in?signed_out=1", http.StatusSeeOther)
	return nil
}
