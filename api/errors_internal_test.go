package api

// White-box tests of the error paths no public route reaches on its own yet:
// decodeJSON's 400/413 envelopes, recovered panics and unexpected errors.

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks/internal/testenv"
)

type decodeTarget struct {
	Name       string   `json:"name"`
	Active     *bool    `json:"active"`
	EventTypes []string `json:"event_types"`
	JobIDs     []int64  `json:"job_ids"`
	Nested     struct {
		Count int `json:"count"`
	} `json:"nested"`
}

// newErrorTestServer builds a server with NewServer's middleware and routes
// that fail in the ways handlers can.
func newErrorTestServer(t *testing.T) (url string, logs *testenv.LogBuffer) {
	t.Helper()
	logs = &testenv.LogBuffer{}
	s := &Server{logger: slog.New(slog.NewJSONHandler(logs, nil))}
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	engine.HandleMethodNotAllowed = true
	engine.Use(s.recoverPanics(), s.limitBody())
	engine.NoRoute(s.notFound)
	engine.NoMethod(s.methodNotAllowed)
	engine.POST("/decode", func(c *gin.Context) {
		var v decodeTarget
		if err := decodeJSON(c, &v, ignoreUnknown); err != nil {
			s.writeError(c, err)
			return
		}
		writeData(c, http.StatusOK, v)
	})
	engine.POST("/decode-strict", func(c *gin.Context) {
		var v decodeTarget
		if err := decodeJSON(c, &v); err != nil {
			s.writeError(c, err)
			return
		}
		writeData(c, http.StatusOK, v)
	})
	engine.GET("/panic", func(c *gin.Context) {
		panic("secret panic detail 7f3a")
	})
	engine.GET("/internal", func(c *gin.Context) {
		s.writeError(c, errors.New("pq: connection refused to secret-host 7f3a"))
	})
	srv := httptest.NewServer(engine)
	t.Cleanup(srv.Close)
	return srv.URL, logs
}

type errorBody struct {
	Data   any `json:"data"`
	Status struct {
		Code             int    `json:"code"`
		IsSuccess        bool   `json:"is_success"`
		UserMessage      string `json:"user_message"`
		DeveloperMessage string `json:"developer_message"`
	} `json:"status"`
}

func send(t *testing.T, method, url string, body io.Reader) (int, errorBody, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb errorBody
	if err := json.Unmarshal(raw, &eb); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, raw)
	}
	return resp.StatusCode, eb, string(raw)
}

func TestDecodeJSON_Errors(t *testing.T) {
	url, _ := newErrorTestServer(t)
	tests := []struct {
		name      string
		body      string
		wantCode  int
		wantField string // must appear in the messages
	}{
		{"Empty", "", http.StatusBadRequest, ""},
		{"Malformed", `{"name": `, http.StatusBadRequest, ""},
		{"SyntaxError", `{"name": "x",}`, http.StatusBadRequest, ""},
		{"NotAnObject", `[1,2,3]`, http.StatusBadRequest, ""},
		{"Null", `null`, http.StatusBadRequest, ""},
		{"NullAfterSpace", " \n null ", http.StatusBadRequest, ""},
		{"TwoObjects", `{"name":"a"} {"name":"b"}`, http.StatusBadRequest, ""},
		{"WrongTypeString", `{"name": 5}`, http.StatusBadRequest, "name"},
		{"WrongTypeBool", `{"active": "yes"}`, http.StatusBadRequest, "active"},
		{"WrongTypeArray", `{"event_types": "job.run.started"}`, http.StatusBadRequest, "event_types"},
		{"WrongElementType", `{"job_ids": ["x"]}`, http.StatusBadRequest, "job_ids"},
		{"NestedField", `{"nested": {"count": "many"}}`, http.StatusBadRequest, "nested.count"},
		{"NumberTooBig", `{"job_ids": [1e40]}`, http.StatusBadRequest, "job_ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, eb, raw := send(t, http.MethodPost, url+"/decode", strings.NewReader(tt.body))
			if code != tt.wantCode || eb.Status.Code != tt.wantCode || eb.Status.IsSuccess || eb.Data != nil {
				t.Fatalf("got %d %s, want %d error envelope", code, raw, tt.wantCode)
			}
			if eb.Status.UserMessage == "" || eb.Status.DeveloperMessage == "" {
				t.Fatalf("messages missing: %s", raw)
			}
			if tt.wantField != "" && !strings.Contains(eb.Status.DeveloperMessage, tt.wantField) {
				t.Fatalf("developer_message %q does not name field %q", eb.Status.DeveloperMessage, tt.wantField)
			}
			if tt.wantField != "" && !strings.Contains(eb.Status.UserMessage, tt.wantField) {
				t.Fatalf("user_message %q does not name field %q", eb.Status.UserMessage, tt.wantField)
			}
		})
	}
}

func TestDecodeJSON_Valid(t *testing.T) {
	url, _ := newErrorTestServer(t)
	code, _, raw := send(t, http.MethodPost, url+"/decode", strings.NewReader(`{"name":"x","active":true,"job_ids":[1,2]}`))
	if code != http.StatusOK {
		t.Fatalf("got %d %s, want 200", code, raw)
	}
}

// A body over the limit sent without Content-Length (chunked) is cut off by
// MaxBytesReader while decoding, and still answered with 413.
func TestDecodeJSON_ChunkedBodyOverLimit(t *testing.T) {
	url, _ := newErrorTestServer(t)
	big := `{"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	// A reader of unknown length makes the client send it chunked.
	code, eb, raw := send(t, http.MethodPost, url+"/decode", io.MultiReader(strings.NewReader(big)))
	if code != http.StatusRequestEntityTooLarge || eb.Status.Code != http.StatusRequestEntityTooLarge || eb.Data != nil {
		t.Fatalf("got %d %.300s, want 413 envelope", code, raw)
	}
}

func TestErrors_PanicIsLoggedGeneric500(t *testing.T) {
	url, logs := newErrorTestServer(t)
	code, eb, raw := send(t, http.MethodGet, url+"/panic", nil)
	if code != http.StatusInternalServerError || eb.Status.Code != 500 || eb.Status.IsSuccess || eb.Data != nil {
		t.Fatalf("got %d %s, want 500 envelope", code, raw)
	}
	if strings.Contains(raw, "7f3a") || strings.Contains(raw, "secret") {
		t.Fatalf("500 body shows the panic: %s", raw)
	}
	if eb.Status.UserMessage == "" || eb.Status.DeveloperMessage == "" {
		t.Fatalf("messages missing: %s", raw)
	}
	if !strings.Contains(logs.String(), "secret panic detail 7f3a") {
		t.Fatalf("panic not logged; logs:\n%s", logs)
	}
	// The server keeps serving after a panic.
	if code, _, raw := send(t, http.MethodGet, url+"/panic", nil); code != http.StatusInternalServerError {
		t.Fatalf("second panic: got %d %s", code, raw)
	}
}

func TestErrors_UnexpectedErrorIsLoggedGeneric500(t *testing.T) {
	url, logs := newErrorTestServer(t)
	code, eb, raw := send(t, http.MethodGet, url+"/internal", nil)
	if code != http.StatusInternalServerError || eb.Status.Code != 500 || eb.Data != nil {
		t.Fatalf("got %d %s, want 500 envelope", code, raw)
	}
	if strings.Contains(raw, "7f3a") || strings.Contains(raw, "secret-host") {
		t.Fatalf("500 body shows the internal error: %s", raw)
	}
	if !strings.Contains(logs.String(), "secret-host 7f3a") {
		t.Fatalf("internal error not logged; logs:\n%s", logs)
	}
}

// TestDecodeJSON_RefusesUnknownMembers: by default (the API's own objects)
// a member whose name is not exactly a field's JSON name, even only in
// case, nested or not, is a 400 naming it and offering the known names.
func TestDecodeJSON_RefusesUnknownMembers(t *testing.T) {
	url, _ := newErrorTestServer(t)
	for _, tt := range []struct {
		name, body, field string
	}{
		{"Misspelt", `{"name":"x","actve":true}`, "actve"},
		{"OtherCase", `{"NAME":"x"}`, "NAME"},
		{"GoFieldName", `{"EventTypes":["a"]}`, "EventTypes"},
		{"Nested", `{"nested":{"count":1,"cnt":2}}`, "nested.cnt"},
		{"NestedOtherCase", `{"nested":{"COUNT":5}}`, "nested.COUNT"},
		{"NameNotPrintable", `{"na\u0000me":1}`, "na?me"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, eb, raw := send(t, http.MethodPost, url+"/decode-strict", strings.NewReader(tt.body))
			if code != http.StatusBadRequest || !strings.Contains(eb.Status.DeveloperMessage, `invalid field "`+tt.field+`"`) {
				t.Fatalf("got %d %s, want 400 naming %s", code, raw, tt.field)
			}
			if !strings.Contains(eb.Status.UserMessage, "name, active, event_types, job_ids, nested") &&
				!strings.Contains(eb.Status.UserMessage, "the fields here are count") {
				t.Errorf("user_message %q does not list the known fields", eb.Status.UserMessage)
			}
		})
	}
	code, _, raw := send(t, http.MethodPost, url+"/decode-strict", strings.NewReader(`{"name":"x","nested":{"count":2}}`))
	if code != http.StatusOK {
		t.Fatalf("known members only: got %d %s", code, raw)
	}
}

// TestDecodeJSON_NamesMatchExactly: with ignoreUnknown (the spec's request
// objects), a member whose name is not exactly a field's JSON name, even
// only in case, is an unknown field: ignored, never decoded into the field
// (encoding/json alone would).
func TestDecodeJSON_NamesMatchExactly(t *testing.T) {
	url, _ := newErrorTestServer(t)
	tests := []struct {
		name string
		body string
		want string // the decoded value, as the test route echoes it
	}{
		{"ExactName", `{"name":"x"}`, `{"name":"x","active":null,"event_types":null,"job_ids":null,"nested":{"count":0}}`},
		{"UpperCaseIgnored", `{"NAME":"x"}`, `{"name":"","active":null,"event_types":null,"job_ids":null,"nested":{"count":0}}`},
		{"GoFieldNameIgnored", `{"Name":"x","EventTypes":["a"]}`, `{"name":"","active":null,"event_types":null,"job_ids":null,"nested":{"count":0}}`},
		{"InexactAfterExactDoesNotOverride", `{"name":"a","NAME":"b"}`, `{"name":"a","active":null,"event_types":null,"job_ids":null,"nested":{"count":0}}`},
		{"InexactBeforeExactDoesNotOverride", `{"NAME":"b","name":"a"}`, `{"name":"a","active":null,"event_types":null,"job_ids":null,"nested":{"count":0}}`},
		{"InexactNotTypeChecked", `{"ACTIVE":"yes","Job_IDs":"x"}`, `{"name":"","active":null,"event_types":null,"job_ids":null,"nested":{"count":0}}`},
		{"NestedExact", `{"nested":{"count":5}}`, `{"name":"","active":null,"event_types":null,"job_ids":null,"nested":{"count":5}}`},
		{"NestedInexactIgnored", `{"nested":{"COUNT":5},"Nested":{"count":6}}`, `{"name":"","active":null,"event_types":null,"job_ids":null,"nested":{"count":0}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, raw := send(t, http.MethodPost, url+"/decode", strings.NewReader(tt.body))
			var env struct {
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal([]byte(raw), &env); err != nil || code != http.StatusOK {
				t.Fatalf("got %d %s, want 200", code, raw)
			}
			if string(env.Data) != tt.want {
				t.Fatalf("decoded %s\n          want %s", env.Data, tt.want)
			}
		})
	}
}
