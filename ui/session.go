package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/secrets"
)

const (
	sessionCookie    = "wh_ui_session"
	signInCSRFCookie = "wh_ui_signin"
	csrfField        = "csrf_token"
	// sessionAAD binds a sealed session to its purpose, so a ciphertext made
	// for anything else (an hmac_secret) never opens as a session.
	sessionAAD = "ui-session"
	// sessionLifetime bounds how long a sign-in lasts, checked server-side
	// against the sealed issue time (the cookie's Max-Age is only a hint).
	sessionLifetime = 12 * time.Hour
)

// session is a signed-in browser: the API token it signed in with (sealed in
// the cookie, never stored server-side), the principal that token resolves to
// right now, and the CSRF token its forms must carry.
type session struct {
	token     string
	cookie    string
	principal *webhooks.Principal
	csrf      string
}

var errNoSession = errors.New("no valid session")

// sessionCodec seals API tokens into cookie values and opens them again.
type sessionCodec struct {
	box *secrets.Box
	now func() time.Time
}

// seal returns the cookie value for token: keyID "." base64url(AES-GCM of
// "issuedUnix|token").
func (c sessionCodec) seal(token string) string {
	plain := strconv.FormatInt(c.now().Unix(), 10) + "|" + token
	keyID, ct := c.box.Seal(plain, sessionAAD)
	return keyID + "." + base64.RawURLEncoding.EncodeToString(ct)
}

// open returns the token sealed in value, or errNoSession when the value was
// not made by seal with one of our keys or has expired.
func (c sessionCodec) open(value string) (string, error) {
	keyID, enc, ok := strings.Cut(value, ".")
	if !ok {
		return "", errNoSession
	}
	ct, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return "", errNoSession
	}
	plain, err := c.box.Open(keyID, ct, sessionAAD)
	if err != nil {
		return "", errNoSession
	}
	issuedText, token, ok := strings.Cut(plain, "|")
	issued, err := strconv.ParseInt(issuedText, 10, 64)
	if !ok || err != nil || token == "" {
		return "", errNoSession
	}
	if age := c.now().Sub(time.Unix(issued, 0)); age < -time.Minute || age > sessionLifetime {
		return "", errNoSession
	}
	return token, nil
}

// csrfToken is the synchronizer token of a session: an HMAC of the session
// cookie keyed with the session's API token, which only the server (and the
// page it rendered) can know. It changes whenever the cookie does.
func csrfToken(token, cookie string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("ui-csrf\x00"))
	m.Write([]byte(cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validCSRF compares a submitted token with the expected one in constant time.
func validCSRF(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// secureRequest tells whether the browser reached us over https, directly or
// through a proxy that says so, or the public base URL is https.
func (s *Server) secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") ||
		strings.HasPrefix(strings.ToLower(s.publicBaseURL), "https://")
}

func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     "/ui",
		MaxAge:   int(maxAge / time.Second),
		HttpOnly: true,
		Secure:   s.secureRequest(r),
		SameSite: http.SameSiteLaxMode,
	})
}

func (s *Server) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: "/ui", MaxAge: -1,
		HttpOnly: true, Secure: s.secureRequest(r), SameSite: http.SameSiteLaxMode,
	})
}

// startSession signs the browser in with token (already authenticated).
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, token string) {
	s.setCookie(w, r, sessionCookie, s.sessions.seal(token), sessionLifetime)
}

// loadSession resolves the session cookie into a live session. A token that
// was rotated or revoked since sign-in no longer authenticates, so the
// session ends at once.
func (s *Server) loadSession(r *http.Request) (*session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, errNoSession
	}
	token, err := s.sessions.open(c.Value)
	if err != nil {
		return nil, err
	}
	p, err := s.identity.Authenticate(r.Context(), token)
	if err != nil {
		if webhooks.ErrorCode(err) == webhooks.EUNAUTHORIZED {
			return nil, errNoSession
		}
		return nil, err
	}
	return &session{token: token, cookie: c.Value, principal: p, csrf: csrfToken(token, c.Value)}, nil
}

// randomToken returns 32 random bytes, base64url encoded.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
