package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
)

// accountJSON is an account as GET /api/v2/accounts returns it; ids are JSON
// integers there, as existing clients expect.
type accountJSON struct {
	ID         int64  `json:"id"`
	Identifier string `json:"identifier"`
	Name       string `json:"name"`
	Plan       string `json:"plan"`
}

func toAccountJSON(a webhooks.Account) accountJSON {
	return accountJSON{ID: a.ID, Identifier: a.Identifier, Name: a.Name, Plan: a.Plan}
}

func (s *Server) listAccounts(c *gin.Context) {
	p := principal(c)
	out := make([]accountJSON, 0, len(p.Memberships))
	for _, m := range p.Memberships {
		out = append(out, toAccountJSON(m.Account))
	}
	writeData(c, http.StatusOK, out)
}

func (s *Server) getAccount(c *gin.Context) {
	m, err := s.membership(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusOK, toAccountJSON(m.Account))
}

type rotatedKeyJSON struct {
	UserID    int64  `json:"user_id"`
	Key       string `json:"key"`
	CreatedAt string `json:"created_at"`
}

// rotateAPIKey replaces the caller's personal key (spec 4.7). Only the user's
// own current key may rotate it.
func (s *Server) rotateAPIKey(c *gin.Context) {
	userID, err := strconv.ParseInt(c.Param("user_id"), 10, 64)
	if err != nil || userID <= 0 {
		s.writeError(c, webhooks.Errorf(webhooks.ENOTFOUND, "User not found."))
		return
	}
	p := principal(c)
	if p.Kind != webhooks.PrincipalUser {
		s.writeError(c, webhooks.Errorf(webhooks.EFORBIDDEN, "Only a user's own personal API key can rotate it; service tokens cannot."))
		return
	}
	if p.UserID != userID {
		s.writeError(c, webhooks.Errorf(webhooks.EFORBIDDEN, "You can only rotate your own API key."))
		return
	}
	key, createdAt, err := s.identity.RotateUserKey(c.Request.Context(), userID, bearerToken(c.Request))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	writeData(c, http.StatusOK, rotatedKeyJSON{UserID: userID, Key: key, CreatedAt: MicrosString(createdAt)})
}

// MicrosString renders t as microseconds since the Unix epoch in a digit
// string, the wire format of created_at and updated_at.
func MicrosString(t time.Time) string {
	return strconv.FormatInt(t.UnixMicro(), 10)
}
