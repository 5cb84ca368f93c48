// Package webhooks holds the domain of the webhook service: its error codes,
// identifiers, callers and the rules every other package applies.
package webhooks

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error codes. The HTTP layer maps each to one status code; anything that is
// not an *Error is internal and its text never reaches a client.
const (
	EINVALID      = "invalid"      // 400: bad input, names the field
	EUNAUTHORIZED = "unauthorized" // 401: missing or invalid credential
	EFORBIDDEN    = "forbidden"    // 403: valid credential, no access
	ENOTFOUND     = "not_found"    // 404: unknown resource
	EMETHOD       = "method"       // 405: method not allowed on this path
	ECONFLICT     = "conflict"     // 409: state does not allow the operation
	ETOOLARGE     = "too_large"    // 413: request body over the limit
	ETOOMANY      = "too_many"     // 429: over a bound on what is held at once; try again later
	EUNAVAILABLE  = "unavailable"  // 503: a dependency is down
	EBADGATEWAY   = "bad_gateway"  // 502: what the request was relayed to failed
	ETIMEOUT      = "timeout"      // 504: what the request was relayed to did not answer in time
	EINTERNAL     = "internal"     // 500: everything else
)

// Error is an application error a client may see.
type Error struct {
	Code    string
	Message string // user-facing text
	Field   string // the input field at fault, for EINVALID
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf returns an EINVALID error naming the input field at fault.
func FieldErrorf(field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of an application error, or EINTERNAL.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the user-facing message of an application error, or a
// generic one for internal errors so their details never leak.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}

// httpStatuses maps error codes to HTTP status codes: the one table both the
// API and the web UI answer with.
var httpStatuses = map[string]int{
	EINVALID:      http.StatusBadRequest,
	EUNAUTHORIZED: http.StatusUnauthorized,
	EFORBIDDEN:    http.StatusForbidden,
	ENOTFOUND:     http.StatusNotFound,
	EMETHOD:       http.StatusMethodNotAllowed,
	ECONFLICT:     http.StatusConflict,
	ETOOLARGE:     http.StatusRequestEntityTooLarge,
	ETOOMANY:      http.StatusTooManyRequests,
	EUNAVAILABLE:  http.StatusServiceUnavailable,
	EBADGATEWAY:   http.StatusBadGateway,
	ETIMEOUT:      http.StatusGatewayTimeout,
	EINTERNAL:     http.StatusInternalServerError,
}

// HTTPStatus returns the HTTP status code for an error code; unknown codes
// are internal errors (500).
func HTTPStatus(code string) int {
	if status, ok := httpStatuses[code]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// Problems is every problem found in one input, at most one per field, in
// the order the fields are checked. errors.As finds the first as an *Error,
// so a front end that reports one problem (the API) reports the first; a
// form shows each beside its field.
type Problems []*Error

func (p Problems) Error() string {
	msgs := make([]string, len(p))
	for i, e := range p {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the problems, for errors.As and errors.Is.
func (p Problems) Unwrap() []error {
	errs := make([]error, len(p))
	for i, e := range p {
		errs[i] = e
	}
	return errs
}

// Has reports whether one of the problems names field.
func (p Problems) Has(field string) bool {
	for _, e := range p {
		if e.Field == field {
			return true
		}
	}
	return false
}

// Err returns p as an error, or nil when there are no problems.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return p
}

// first returns the first problem as an error (an *Error), or nil.
func (p Problems) first() error {
	if len(p) == 0 {
		return nil
	}
	return p[0]
}

// add appends e unless it is nil or its field already has a problem.
func (p *Problems) add(e *Error) {
	if e != nil && (e.Field == "" || !p.Has(e.Field)) {
		*p = append(*p, e)
	}
}
