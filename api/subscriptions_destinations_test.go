package api_test

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks/netguard"
)

// TestSubscriptions_RefuseNonGlobalDestinations: by default a client_url on
// a loopback, private, link-local or metadata address, literally or by DNS,
// is refused at create and update, and nothing is stored.
func TestSubscriptions_RefuseNonGlobalDestinations(t *testing.T) {
	s := newSubsAPI(t, nil)
	existing := s.mustCreateSub(t, nil)
	tests := []struct{ url, message string }{
		{"http://127.0.0.1:8080/hook", "client_url points to 127.0.0.1, a loopback address"},
		{"https://10.0.0.1/hook", "10.0.0.1, a private address"},
		{"http://[::1]:9000/", "::1, a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254, a cloud metadata address"},
		{"http://localhost:8080/hook", "client_url resolves to 127.0.0.1, a loopback address"},
		{"https://" + loopbackHost + "/hook", "client_url resolves to 127.0.0.1"},
		{"https://" + privateHost + "/hook", "client_url resolves to 10.0.0.7, a private address"},
		{"http://[fd00:ec2::254]/", "a cloud metadata address"},
		{"http://[::ffff:10.0.0.1]/", "a private address"},
		{"http://0.0.0.0/", "an unspecified address"},
		{"http://2130706433/", "neither a valid IP address nor a host name"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			body := validBody()
			body["client_url"] = tt.url
			for _, req := range []struct{ method, url string }{
				{http.MethodPost, s.subsURL(s.Account.ID)},
				{http.MethodPut, s.subURL(s.Account.ID, existing.ID)},
			} {
				resp := doJSON(t, req.method, req.url, s.Writer, body)
				requireErrorEnvelope(t, resp, http.StatusBadRequest)
				if !strings.Contains(resp.Env.Status.UserMessage, tt.message) {
					t.Errorf("%s: user_message %q does not contain %q", req.method, resp.Env.Status.UserMessage, tt.message)
				}
				if !strings.Contains(resp.Env.Status.DeveloperMessage, `"client_url"`) {
					t.Errorf("%s: developer_message %q does not name client_url", req.method, resp.Env.Status.DeveloperMessage)
				}
			}
		})
	}
	if n := s.subscriptionRowCount(t); n != 1 {
		t.Errorf("%d subscriptions stored, want only the first", n)
	}
	if got := s.mustGetSub(t, existing.ID); got.ClientURL != existing.ClientURL || got.UpdatedAt != existing.UpdatedAt {
		t.Errorf("refused updates changed the subscription: %+v", got)
	}
}

// TestSubscriptions_DevAllowance: dev mode's DESTINATION_ALLOW_CIDRS
// (127.0.0.0/8, ::1/128) lets local receivers in, and nothing else.
func TestSubscriptions_DevAllowance(t *testing.T) {
	s := newSubsAPI(t, &netguard.Policy{Allow: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
	}})
	for _, url := range []string{"http://127.0.0.1:8080/hook", "http://localhost:9000/", "http://[::1]:9000/", "https://" + loopbackHost + "/"} {
		body := validBody()
		body["client_url"] = url
		if got := s.mustCreateSub(t, body); got.ClientURL != url {
			t.Errorf("client_url = %q, want %q", got.ClientURL, url)
		}
	}
	for _, url := range []string{"https://10.0.0.1/", "http://169.254.169.254/", "https://" + privateHost + "/"} {
		body := validBody()
		body["client_url"] = url
		resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID), s.Writer, body)
		requireErrorEnvelope(t, resp, http.StatusBadRequest)
	}
}

func TestSubscriptions_RequireHTTPS(t *testing.T) {
	s := newSubsAPI(t, &netguard.Policy{RequireHTTPS: true})
	body := validBody()
	body["client_url"] = "http://" + publicHost + "/"
	resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID), s.Writer, body)
	requireErrorEnvelope(t, resp, http.StatusBadRequest)
	if !strings.Contains(resp.Env.Status.UserMessage, "must use https") {
		t.Errorf("user_message = %q", resp.Env.Status.UserMessage)
	}
	body["client_url"] = "https://" + publicHost + "/"
	s.mustCreateSub(t, body)
}
