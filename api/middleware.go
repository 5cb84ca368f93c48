package api

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
)

const principalKey = "principal"

// recoverPanics turns a panic into a logged 500 in the error envelope.
func (s *Server) recoverPanics() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if rec := recover(); rec != nil {
				if rec == http.ErrAbortHandler {
					panic(rec)
				}
				s.logger.ErrorContext(c.Request.Context(), "panic in handler",
					"route", c.FullPath(), "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
				s.writeError(c, webhooks.Errorf(webhooks.EINTERNAL, "Internal error."))
			}
		}()
		c.Next()
	}
}

// limitBody caps request bodies at MaxBodyBytes; decodeJSON reports 413.
func (s *Server) limitBody() gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > MaxBodyBytes {
			s.writeError(c, webhooks.Errorf(webhooks.ETOOLARGE, "Request body is larger than %d bytes.", MaxBodyBytes))
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, MaxBodyBytes)
		c.Next()
	}
}

// bearerToken returns the token of "Authorization: Token <t>" or
// "Authorization: Bearer <t>" (scheme case-insensitive).
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok {
		return ""
	}
	switch strings.ToLower(scheme) {
	case "token", "bearer":
		return strings.TrimSpace(token)
	}
	return ""
}

// authenticate resolves the caller's credential into a Principal, or 401s.
func (s *Server) authenticate() gin.HandlerFunc {
	return func(c *gin.Context) {
		p, err := s.identity.Authenticate(c.Request.Context(), bearerToken(c.Request))
		if err != nil {
			if webhooks.ErrorCode(err) == webhooks.EUNAUTHORIZED {
				c.Header("WWW-Authenticate", `Token realm="api"`)
			}
			s.writeError(c, err)
			return
		}
		c.Set(principalKey, p)
		c.Next()
	}
}

// principal returns the authenticated caller; authenticate() must have run.
func principal(c *gin.Context) *webhooks.Principal {
	return c.MustGet(principalKey).(*webhooks.Principal)
}

// membership returns the caller's membership in the account named by the
// :account_id path parameter: 404 for a malformed id, 403 for an account the
// credential does not belong to.
func (s *Server) membership(c *gin.Context) (webhooks.Membership, error) {
	return principal(c).AccountMembership(c.Param("account_id"))
}

func (s *Server) notFound(c *gin.Context) {
	s.writeError(c, webhooks.Errorf(webhooks.ENOTFOUND, "No such endpoint: %s %s.", c.Request.Method, c.Request.URL.Path))
}

func (s *Server) methodNotAllowed(c *gin.Context) {
	s.writeError(c, webhooks.Errorf(webhooks.EMETHOD, "Method %s is not allowed on %s.", c.Request.Method, c.Request.URL.Path))
}
