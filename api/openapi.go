package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIJSON is the OpenAPI 3 description of every route in routes.go;
// TestOpenAPI_MatchesRoutes keeps the two in step.
//
//go:embed openapi.json
var openAPIJSON []byte

// OpenAPIDocument returns the embedded OpenAPI document.
func OpenAPIDocument() []byte { return openAPIJSON }

func (s *Server) openAPIDocument(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", openAPIJSON)
}
