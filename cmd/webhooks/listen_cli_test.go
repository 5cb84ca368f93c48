package main

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestListen_RefusesWhatItCannotRun: listen checks its flags and finds a
// token before it calls anything.
func TestListen_RefusesWhatItCannotRun(t *testing.T) {
	noEnv := func(k string) string {
		if k == "WEBHOOKS_DATA_DIR" {
			return filepath.Join(t.TempDir(), "nothing-here")
		}
		return ""
	}
	tests := []struct {
		name  string
		args  []string
		usage bool   // errUsage, with the usage printed
		want  string // else in the error
	}{
		{"Help", []string{"listen", "--help"}, false, ""},
		{"NoForwardTo", []string{"listen", "--token", "whu_x"}, true, ""},
		{"ForwardToNotHTTP", []string{"listen", "--token", "whu_x", "--forward-to", "ftp://localhost/x"}, true, ""},
		{"ForwardToRelative", []string{"listen", "--token", "whu_x", "--forward-to", "/webhooks"}, true, ""},
		{"BadJob", []string{"listen", "--token", "whu_x", "--forward-to", "http://localhost:3000/", "--job", "seven"}, false, `--job "seven"`},
		{"NoToken", []string{"listen", "--forward-to", "http://localhost:3000/"}, false, "WEBHOOKS_API_TOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := runCommand(t, noEnv, tt.args...)
			switch {
			case tt.usage:
				if !errors.Is(err, errUsage) || !strings.Contains(stderr, "Usage: webhooks listen") {
					t.Fatalf("err %v, stderr %q; want errUsage and the usage", err, stderr)
				}
			case tt.want != "":
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err %v, want one containing %q", err, tt.want)
				}
			default:
				if err != nil || !strings.Contains(stderr, "-forward-to") {
					t.Fatalf("err %v, stderr %q; want the flags listed", err, stderr)
				}
			}
		})
	}
}

// TestAttemptLine: what listen prints for an attempt says what the worker
// makes of the local answer.
func TestAttemptLine(t *testing.T) {
	att := listenerAttempt{EventType: "job.run.errored", DeliveryID: "wdl_1", Attempt: 2}
	last := att
	last.Attempt = 6
	tests := []struct {
		name string
		att  listenerAttempt
		ans  localAnswer
		err  error
		want string
	}{
		{"Success", att, localAnswer{StatusCode: 204, DurationMs: 3}, nil, "job.run.errored  wdl_1  attempt 2  -> 204 No Content in 3 ms  succeeded"},
		{"ServerError", att, localAnswer{StatusCode: 503, DurationMs: 9}, nil, "-> 503 Service Unavailable in 9 ms  failed, will be retried"},
		{"ServerErrorOnLastAttempt", last, localAnswer{StatusCode: 500}, nil, "attempt 6  -> 500 Internal Server Error in 0 ms  failed"},
		{"ClientErrorIsFinal", att, localAnswer{StatusCode: 404, DurationMs: 1}, nil, "-> 404 Not Found in 1 ms  failed"},
		{"TooManyRequests", att, localAnswer{StatusCode: 429}, nil, "failed, will be retried"},
		{"Unreachable", att, localAnswer{Error: "connection refused", DurationMs: 1}, nil, "-> no answer after 1 ms (connection refused)  failed, will be retried"},
		{"Abort", att, localAnswer{StatusCode: 503, Headers: map[string][]string{"Webhook-Delivery": {"Abort"}}}, nil, "-> 503 Service Unavailable in 0 ms  failed (Webhook-Delivery: abort)"},
		{"AbortIgnoredOnSuccess", att, localAnswer{StatusCode: 200, Headers: map[string][]string{"Webhook-Delivery": {"abort"}}}, nil, "200 OK in 0 ms  succeeded"},
		{"Disable", att, localAnswer{StatusCode: 200, Headers: map[string][]string{"Webhook-Delivery": {"disable"}}}, nil, "succeeded; the webhook is deactivated (Webhook-Delivery: disable)"},
		{"DisableOnError", att, localAnswer{StatusCode: 500, Headers: map[string][]string{"Webhook-Delivery": {"disable"}}}, nil, "500 Internal Server Error in 0 ms  failed; the webhook is deactivated"},
		{"TooLate", att, localAnswer{StatusCode: 200, DurationMs: 9000}, &apiError{Code: http.StatusConflict, Message: "Too late"}, "too late: the attempt had timed out  failed, will be retried"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := attemptLine(tt.att, tt.ans, tt.err)
			if !strings.Contains(got, tt.want) || (strings.HasSuffix(tt.want, "  failed") && !strings.HasSuffix(got, "  failed")) {
				t.Fatalf("line %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

func TestDevRelayBaseURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080",
		"0.0.0.0:8080":   "http://127.0.0.1:8080",
		":9000":          "http://127.0.0.1:9000",
		"[::]:8080":      "http://[::1]:8080",
		"localhost:81":   "http://localhost:81",
		"127.0.0.1:0":    "",
	} {
		if got := devRelayBaseURL(addr); got != want {
			t.Errorf("devRelayBaseURL(%q) = %q, want %q", addr, got, want)
		}
	}
}

// TestListen_CallLocalPassesTheAnswerBack: of the local endpoint's answer,
// listen passes back the status, the body and the headers the worker acts
// on (Content-Type, Retry-After and the receiver's Webhook-Delivery
// directive), nothing else.
func TestListen_CallLocalPassesTheAnswerBack(t *testing.T) {
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Webhook-Id") != "wdl_1" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Retry-After", "120")
		w.Header().Set("Webhook-Delivery", "abort")
		w.Header().Set("X-Local-Only", "kept here")
		w.WriteHeader(http.StatusGone)
		_, _ = w.Write([]byte("gone for good"))
	}))
	defer local.Close()
	l := &listener{forwardTo: local.URL, local: local.Client()}
	ans := l.callLocal(context.Background(), listenerAttempt{Headers: map[string][]string{"Webhook-Id": {"wdl_1"}}}, []byte(`{}`))
	want := map[string][]string{"Content-Type": {"text/plain"}, "Retry-After": {"120"}, "Webhook-Delivery": {"abort"}}
	if ans.Error != "" || ans.StatusCode != http.StatusGone || !reflect.DeepEqual(ans.Headers, want) {
		t.Fatalf("answer = %+v; want 410 with headers %v", ans, want)
	}
	if b, _ := base64.StdEncoding.DecodeString(ans.BodyBase64); string(b) != "gone for good" {
		t.Fatalf("answer body = %q", b)
	}
}
