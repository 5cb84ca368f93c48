package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// rawBody is validBody with field set to the raw JSON string contents raw
// (between the quotes, unescaped by Go): json.Marshal would repair invalid
// UTF-8, and these tests must send it.
func rawBody(t *testing.T, field, raw string) []byte {
	t.Helper()
	b := validBody()
	b[field] = "@@placeholder@@"
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Replace(out, []byte(`"@@placeholder@@"`), []byte(`"`+raw+`"`), 1)
}

// TestSubscriptions_RefuseInvalidUTF8 : invalid UTF-8 (or a lone surrogate
// escape) in name or description is a 400 naming the field, on create and
// update, and nothing is stored; it used to be stored as U+FFFD.
func TestSubscriptions_RefuseInvalidUTF8(t *testing.T) {
	s := newSubsAPI(t, nil)
	existing := s.mustCreateSub(t, nil)
	tests := []struct {
		name  string
		field string
		raw   string
	}{
		{"NameLatin1", "name", "caf\xe9"},
		{"NameInvalidBytes", "name", "alerts \xff\xfe"},
		{"NameTruncatedRune", "name", "alerts \xc3"},
		{"NameLoneSurrogateEscape", "name", `alerts \ud800`},
		{"DescriptionLatin1", "description", "caf\xe9"},
		{"DescriptionInvalidBytes", "description", "\xff\xfe"},
		{"DescriptionLoneSurrogateEscape", "description", `x\udc00y`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := s.subscriptionRowCount(t)
			resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID), s.Writer, rawBody(t, tt.field, tt.raw))
			requireFieldError(t, resp, tt.field, "valid UTF-8")
			if n := s.subscriptionRowCount(t); n != rows {
				t.Errorf("create stored a row: %d rows, want %d", n, rows)
			}
			resp = doJSON(t, http.MethodPut, s.subURL(s.Account.ID, existing.ID), s.Writer, []byte(`{"`+tt.field+`":"`+tt.raw+`"}`))
			requireFieldError(t, resp, tt.field, "valid UTF-8")
			if got := s.mustGetSub(t, existing.ID); got.Name != existing.Name || got.Description != existing.Description {
				t.Errorf("update changed the subscription: name %q description %q", got.Name, got.Description)
			}
		})
	}
}

// TestSubscriptions_KeepValidUnicodeExactly: what is valid text, including
// U+FFFD sent as a character and escaped surrogate pairs, is stored as sent.
func TestSubscriptions_KeepValidUnicodeExactly(t *testing.T) {
	s := newSubsAPI(t, nil)
	body := rawBody(t, "name", `caf\u00e9 \ud83d\ude00 `+"\uFFFD é")
	resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID), s.Writer, body)
	requireStatus(t, resp, http.StatusCreated)
	var got subItem
	resp.decodeData(t, &got)
	if want := "café 😀 \uFFFD é"; got.Name != want || s.mustGetSub(t, got.ID).Name != want {
		t.Errorf("name = %q, want %q", got.Name, want)
	}
}

// requireFieldError fails unless resp is a 400 envelope whose messages name
// field and whose user_message contains message.
func requireFieldError(t *testing.T, resp *testResponse, field, message string) {
	t.Helper()
	requireErrorEnvelope(t, resp, http.StatusBadRequest)
	if !strings.Contains(resp.Env.Status.DeveloperMessage, `"`+field+`"`) || !strings.Contains(resp.Env.Status.UserMessage, message) {
		t.Errorf("400 does not name %s with %q: %s", field, message, resp.Body)
	}
}
