package ui

import (
	"net/http"

	"github.com/jobhooks/jobhooks"
)

type apiAccessView struct {
	layoutView
	MaskedKey string
	// NewKey is set only on the response to a rotation: shown once.
	NewKey string
	UserID int64
}

// maskToken shows enough of a token to recognise it and nothing to use it.
func maskToken(token string) string {
	const prefixLen, tailLen = 4, 4
	if len(token) <= prefixLen+tailLen+4 {
		return "••••••••"
	}
	return token[:prefixLen] + "••••••••••••" + token[len(token)-tailLen:]
}

// apiAccess is Profile › API Access (spec 2.5, 4.7).
func (s *Server) apiAccess(w http.ResponseWriter, r *http.Request, sess *session) error {
	return s.render(w, r, http.StatusOK, "api_access", sess, &apiAccessView{
		layoutView: s.layout(sess, "API Access", nil, "api-access"),
		MaskedKey:  maskToken(sess.token), UserID: sess.principal.UserID,
	})
}

// rotateConfirm asks before rotating; it is a page of its own so the flow
// needs no JavaScript.
func (s *Server) rotateConfirm(w http.ResponseWriter, r *http.Request, sess *session) error {
	if sess.principal.Kind != webhooks.PrincipalUser {
		return errServiceTokenRotation
	}
	return s.render(w, r, http.StatusOK, "rotate_confirm", sess, &apiAccessView{
		layoutView: s.layout(sess, "Rotate API key", nil, "api-access"),
		MaskedKey:  maskToken(sess.token), UserID: sess.principal.UserID,
	})
}

var errServiceTokenRotation = webhooks.Errorf(webhooks.EFORBIDDEN,
	"You are signed in with a service token. Only a user's personal API key can be rotated here.")

// rotateKey replaces the user's personal key through the same store call as
// POST /api/v2/users/{id}/apikey, moves this session onto the new key and
// shows it once. The old key stops working at once, in the API and in any
// other browser signed in with it.
func (s *Server) rotateKey(w http.ResponseWriter, r *http.Request, sess *session) error {
	if sess.principal.Kind != webhooks.PrincipalUser {
		return errServiceTokenRotation
	}
	key, _, err := s.identity.RotateUserKey(r.Context(), sess.principal.UserID, sess.token)
	if webhooks.ErrorCode(err) == webhooks.EUNAUTHORIZED {
		// Rotated meanwhile elsewhere: this session's key is gone.
		s.clearCookie(w, r, sessionCookie)
		http.Redirect(w, r, "/ui/sign-in", http.StatusSeeOther)
		return nil
	} else if err != nil {
		return err
	}
	sess.token = key
	sess.cookie = s.sessions.seal(key)
	sess.csrf = csrfToken(sess.token, sess.cookie)
	s.setCookie(w, r, sessionCookie, sess.cookie, sessionLifetime)
	v := &apiAccessView{
		layoutView: s.layout(sess, "API Access", nil, "api-access"),
		MaskedKey:  maskToken(key), NewKey: key, UserID: sess.principal.UserID,
	}
	v.Flash = "Your API key was rotated. The previous key no longer works."
	return s.render(w, r, http.StatusOK, "api_access", sess, v)
}
