package api_test

// Every exchange the API tests make is checked against api/openapi.json
// with kin-openapi: doRequest and sendAll call checkExchange.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/jobhooks/jobhooks/api"
)

// openAPI is the served document, loaded and checked once per test binary.
var openAPI = sync.OnceValues(func() (*openAPIChecker, error) {
	ctx := context.Background()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPIDocument())
	if err != nil {
		return nil, fmt.Errorf("load api/openapi.json: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("api/openapi.json is not a valid OpenAPI document: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route api/openapi.json: %w", err)
	}
	errorEnvelope := doc.Components.Schemas["ErrorEnvelope"]
	if errorEnvelope == nil {
		return nil, errors.New("api/openapi.json defines no ErrorEnvelope schema")
	}
	return &openAPIChecker{router: router, errorEnvelope: errorEnvelope.Value}, nil
})

type openAPIChecker struct {
	router        routers.Router
	errorEnvelope *openapi3.Schema
}

// checkExchange checks one finished exchange against the document:
//   - the response is one the document gives for the operation: a
//     documented status, its required headers, a body of its schema;
//   - a request the document calls invalid did not succeed;
//   - a path or method the document lacks was answered with a 404 or 405
//     error envelope.
//
// It returns what is wrong, or nil.
func checkExchange(method, url string, reqHeader http.Header, reqBody []byte, status int, respHeader http.Header, respBody []byte) error {
	c, err := openAPI()
	if err != nil {
		return err
	}
	ctx := context.Background()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(reqBody))
	if err != nil {
		return fmt.Errorf("openapi check: %w", err)
	}
	req.Header = reqHeader.Clone()
	// The server answers every path with and without a trailing slash.
	if p := strings.TrimRight(req.URL.Path, "/"); p != "" {
		req.URL.Path, req.URL.RawPath = p, ""
	}
	exchange := fmt.Sprintf("%s %s -> %d %s", method, url, status, respBody)

	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("openapi: no documented operation (%v) for %s", err, exchange)
		}
		if err := c.errorEnvelope.VisitJSON(decodeAny(respBody)); err != nil {
			return fmt.Errorf("openapi: %d is not an ErrorEnvelope: %v\n%s", status, err, exchange)
		}
		return nil
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if reqErr := openapi3filter.ValidateRequest(ctx, in); reqErr != nil && status < 400 {
		return fmt.Errorf("openapi: the document calls the request invalid (%v), yet it succeeded: %s", reqErr, exchange)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: respHeader,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("openapi: response does not match the document: %v\n%s", err, exchange)
	}
	return nil
}

// decodeAny decodes a JSON body for schema checks; nil when it is not JSON.
func decodeAny(body []byte) any {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil
	}
	return v
}

// TestCheckExchange_CatchesDrift: the check refuses exchanges that differ
// from the document, and accepts one that matches it.
func TestCheckExchange_CatchesDrift(t *testing.T) {
	const (
		base = "http://api.test/api/v3/accounts/7/webhooks/subscription/wsu_abc"
		ok   = `{"data":{"verification_error":null,"verification_status_code":"200"},"status":{"code":200,"is_success":true}}`
	)
	jsonHeader := func(kv ...string) http.Header {
		h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tokenHeader := http.Header{"Authorization": {"Token whu_x"}}
	tests := []struct {
		name       string
		method     string
		url        string
		reqBody    string
		status     int
		respHeader http.Header
		respBody   string
		wantErr    bool
	}{
		{"Matches", "GET", base + "/test", "", 200, jsonHeader("Webhook-Delivery-Id", "wdl_x"), ok, false},
		{"TrailingSlashRoutes", "GET", base + "/test/", "", 200, jsonHeader("Webhook-Delivery-Id", "wdl_x"), ok, false},
		{"ExtraDataMember", "GET", base + "/test", "", 200, jsonHeader("Webhook-Delivery-Id", "wdl_x"),
			`{"data":{"verification_error":null,"verification_status_code":"200","delivery_id":"wdl_x"},"status":{"code":200,"is_success":true}}`, true},
		{"RequiredHeaderMissing", "GET", base + "/test", "", 200, jsonHeader(), ok, true},
		{"UndocumentedStatus", "GET", base + "/test", "", 418, jsonHeader(), `{"data":null,"status":{"code":418,"is_success":false,"user_message":"x","developer_message":"x"}}`, true},
		{"ErrorWithoutMessages", "GET", base, "", 404, jsonHeader(), `{"data":null,"status":{"code":404,"is_success":false}}`, true},
		{"UnknownPathSucceeded", "GET", "http://api.test/api/v9/nothing", "", 200, jsonHeader(), `{}`, true},
		{"UnknownPathNotFound", "GET", "http://api.test/api/v9/nothing", "", 404, jsonHeader(),
			`{"data":null,"status":{"code":404,"is_success":false,"user_message":"x","developer_message":"x"}}`, false},
		{"InvalidRequestSucceeded", "PUT", base, `{"event_types":"job.run.started"}`, 200, jsonHeader(), `{}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqHeader := tokenHeader.Clone()
			if tt.reqBody != "" {
				reqHeader.Set("Content-Type", "application/json")
			}
			err := checkExchange(tt.method, tt.url, reqHeader, []byte(tt.reqBody), tt.status, tt.respHeader, []byte(tt.respBody))
			if (err != nil) != tt.wantErr {
				t.Fatalf("checkExchange = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}
