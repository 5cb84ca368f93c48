package webhooks_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/jobhooks/jobhooks"
)

func TestHTTPStatus(t *testing.T) {
	tests := []struct {
		code string
		want int
	}{
		{webhooks.EINVALID, http.StatusBadRequest},
		{webhooks.EUNAUTHORIZED, http.StatusUnauthorized},
		{webhooks.EFORBIDDEN, http.StatusForbidden},
		{webhooks.ENOTFOUND, http.StatusNotFound},
		{webhooks.EMETHOD, http.StatusMethodNotAllowed},
		{webhooks.ECONFLICT, http.StatusConflict},
		{webhooks.ETOOLARGE, http.StatusRequestEntityTooLarge},
		{webhooks.ETOOMANY, http.StatusTooManyRequests},
		{webhooks.EUNAVAILABLE, http.StatusServiceUnavailable},
		{webhooks.EBADGATEWAY, http.StatusBadGateway},
		{webhooks.ETIMEOUT, http.StatusGatewayTimeout},
		{webhooks.EINTERNAL, http.StatusInternalServerError},
		{"something-new", http.StatusInternalServerError},
	}
	for _, tt := range tests {
		if got := webhooks.HTTPStatus(tt.code); got != tt.want {
			t.Errorf("HTTPStatus(%q) = %d, want %d", tt.code, got, tt.want)
		}
	}
}

func TestErrorMessage_HidesInternalDetail(t *testing.T) {
	err := webhooks.ErrorMessage(errString("pq: password authentication failed for user x"))
	if err != "Internal error." {
		t.Fatalf("ErrorMessage of an internal error = %q", err)
	}
	if got := webhooks.ErrorMessage(webhooks.Errorf(webhooks.EINVALID, "name is required")); got != "name is required" {
		t.Fatalf("ErrorMessage = %q", got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestProblems_ReportTheFirstAsTheError(t *testing.T) {
	p := webhooks.Problems{
		webhooks.FieldErrorf("name", "name is required."),
		webhooks.FieldErrorf("client_url", "client_url must use https."),
	}
	err := p.Err()
	if webhooks.ErrorCode(err) != webhooks.EINVALID || webhooks.ErrorMessage(err) != "name is required." {
		t.Fatalf("code %q message %q, want the first problem's", webhooks.ErrorCode(err), webhooks.ErrorMessage(err))
	}
	var first *webhooks.Error
	if !errors.As(err, &first) || first.Field != "name" {
		t.Fatalf("errors.As found %v, want the name problem", first)
	}
	if !p.Has("client_url") || p.Has("job_ids") {
		t.Fatal("Has does not match the problems' fields")
	}
	if (webhooks.Problems{}).Err() != nil || webhooks.Problems(nil).Err() != nil {
		t.Fatal("no problems must be a nil error")
	}
}
