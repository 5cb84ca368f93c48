package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db"
)

// Status is the "status" object of every response envelope.
type Status struct {
	Code             int    `json:"code"`
	IsSuccess        bool   `json:"is_success"`
	UserMessage      string `json:"user_message,omitempty"`
	DeveloperMessage string `json:"developer_message,omitempty"`
}

// errorStatus is the status object of an error: messages always present.
type errorStatus struct {
	Code             int    `json:"code"`
	IsSuccess        bool   `json:"is_success"`
	UserMessage      string `json:"user_message"`
	DeveloperMessage string `json:"developer_message"`
}

type envelope struct {
	Data   any `json:"data"`
	Status any `json:"status"`
	Extra  any `json:"extra,omitempty"`
}

// writeData writes a success envelope.
func writeData(c *gin.Context, code int, data any) {
	c.JSON(code, envelope{Data: data, Status: Status{Code: code, IsSuccess: true}})
}

// writeList writes a success envelope with "extra".
func writeList(c *gin.Context, data, extra any) {
	c.JSON(http.StatusOK, envelope{Data: data, Status: Status{Code: http.StatusOK, IsSuccess: true}, Extra: extra})
}

// retryAfterSeconds is the Retry-After of every 503 and 429: long enough
// for a database restart or failover, or for held requests to end, short
// enough not to stall clients.
const retryAfterSeconds = "5"

// writeError writes the error envelope for err. Internal errors are logged
// with their detail and shown to the client only as a generic message. A
// dependency outage (dependencyOutage) is a 503 with Retry-After, as is
// every EUNAVAILABLE error; every ETOOMANY is a 429 with Retry-After.
func (s *Server) writeError(c *gin.Context, err error) {
	if outage, ok := dependencyOutage(err); ok {
		s.logger.ErrorContext(c.Request.Context(), "dependency unavailable",
			"method", c.Request.Method, "route", c.FullPath(), "error", err.Error())
		err = outage
	}
	code := webhooks.ErrorCode(err)
	httpCode := webhooks.HTTPStatus(code)
	msg := webhooks.ErrorMessage(err)
	devMsg := msg
	var e *webhooks.Error
	if errors.As(err, &e) && e.Field != "" {
		devMsg = fmt.Sprintf("invalid field %q: %s", e.Field, e.Message)
	}
	if code == webhooks.EINTERNAL {
		s.logger.ErrorContext(c.Request.Context(), "internal error",
			"method", c.Request.Method, "route", c.FullPath(), "error", err.Error())
		devMsg = "An internal error occurred; it has been logged."
	}
	if httpCode == http.StatusServiceUnavailable || httpCode == http.StatusTooManyRequests {
		c.Header("Retry-After", retryAfterSeconds)
	}
	c.AbortWithStatusJSON(httpCode, envelope{Data: nil, Status: errorStatus{
		Code: httpCode, IsSuccess: false, UserMessage: msg, DeveloperMessage: devMsg,
	}})
}

// dependencyOutage returns the EUNAVAILABLE error to answer instead of err
// when err is not an application error but says a dependency (the database)
// cannot serve right now; the detail is for the log only.
func dependencyOutage(err error) (*webhooks.Error, bool) {
	var e *webhooks.Error
	if errors.As(err, &e) || !db.Unavailable(err) {
		return nil, false
	}
	return webhooks.Errorf(webhooks.EUNAVAILABLE, "The service is temporarily unavailable; try again shortly."), true
}

// decodeJSON decodes the request body into v, turning every decoding problem
// into a clear EINVALID (or ETOOLARGE) error that names the field at fault.
// Member names match v's JSON field names exactly (exactMembers): any other
// member, "NAME" for "name" included, is an unknown field, a 400 naming it
// unless the call passes ignoreUnknown (the spec's request objects only).
func decodeJSON(c *gin.Context, v any, unknown ...unknownMembers) error {
	mode := refuseUnknown
	if len(unknown) > 0 {
		mode = unknown[0]
	}
	dec := json.NewDecoder(c.Request.Body)
	var raw json.RawMessage
	err := dec.Decode(&raw)
	if err == nil && dec.More() {
		return webhooks.Errorf(webhooks.EINVALID, "Request body must contain a single JSON object.")
	}
	if err == nil && string(raw) == "null" {
		return webhooks.Errorf(webhooks.EINVALID, "Request body must be a JSON object.")
	}
	if err == nil {
		var exact []byte
		if exact, err = exactMembers(raw, reflect.TypeOf(v), mode, ""); err == nil {
			err = json.Unmarshal(exact, v)
		}
	}
	if err == nil {
		return nil
	}
	var (
		maxErr    *http.MaxBytesError
		typeErr   *json.UnmarshalTypeError
		syntaxErr *json.SyntaxError
	)
	switch {
	case errors.As(err, &maxErr):
		return webhooks.Errorf(webhooks.ETOOLARGE, "Request body is larger than %d bytes.", maxErr.Limit)
	case errors.Is(err, io.EOF):
		return webhooks.Errorf(webhooks.EINVALID, "Request body must be a JSON object.")
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return webhooks.Errorf(webhooks.EINVALID, "Request body must be a JSON object.")
		}
		return webhooks.FieldErrorf(field, "%s must be of type %s, got %s.", field, jsonTypeName(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return webhooks.Errorf(webhooks.EINVALID, "Request body is not valid JSON.")
	default:
		var fe *webhooks.Error
		if errors.As(err, &fe) {
			return fe
		}
		return webhooks.Errorf(webhooks.EINVALID, "Request body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

func jsonTypeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "array"
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "number"
	case goType == "bool", goType == "*bool":
		return "boolean"
	case strings.Contains(goType, "string"):
		return "string"
	default:
		return "object"
	}
}
