package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/feed"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/listeners"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/signingkeys"
)

// withDeliveryStore gives the API a delivery service over the test's
// database whose Temporal never answers: enough for Recent Deliveries reads,
// and every send (test, retry) is unavailable.
func withDeliveryStore(t testing.TB) testAPIOption {
	t.Helper()
	return func(a *testAPI, d *api.Deps) {
		tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tc.Close)
		setDispatch(t, a, d, tc, a.DB.Pool)
	}
}

// withEveryArea gives the API every optional service, over the test's
// database, so that no route answers 503 for want of one. It runs after
// withSubscriptions (whose box it seals with) and withDeliveryStore.
func withEveryArea(t testing.TB, s *subsAPI) testAPIOption {
	t.Helper()
	return func(a *testAPI, d *api.Deps) {
		var store *incidents.Store
		withIncidents(t, &store, &s.Box, &netguard.Policy{}, nil)(a, d)
		d.Feed = feed.NewService(deliveries.NewStore(a.DB.Pool), s.Box)
		keys, err := signingkeys.NewService(signingkeys.NewStore(a.DB.Pool, s.Box), signingkeys.Options{Overlap: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		d.SigningKeys = keys
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		l, err := listeners.NewService(ctx, a.DB.Pool, s.Box, d.Subscriptions, listeners.Options{
			RelayBaseURL: relayBaseURL, AttemptTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		d.Listeners = l
	}
}

// routeParam is a path parameter in a registered gin route.
var routeParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// TestPathIDs_MalformedAreNotFound: a path id that cannot be an id (NUL,
// invalid UTF-8, control characters, not a number, overlong) is a 404 in
// the error envelope, on every route and in every path parameter. It must
// never reach the database, which refuses such text with an error that
// would be a 500 and an internal-error log line. The routes come from the
// server itself, so a new route with a path parameter is covered, or fails
// here until the test knows a valid value for its parameter.
func TestPathIDs_MalformedAreNotFound(t *testing.T) {
	s := &subsAPI{}
	s.testAPI = newTestAPI(t, withSubscriptions(t, &s.Box, nil), withDeliveryStore(t), withEveryArea(t, s))
	s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
	writer := s.mustCreateUser(t, s.Account.ID, "developer", "member")
	s.Writer = writer.Token
	sub := s.mustCreateSub(t, nil)

	// A value of each parameter that passes its checks, so that the
	// malformed one in its place is what the request fails on. Ids with a
	// prefix get malformed variants behind the same prefix too.
	valid := map[string]string{
		"account_id":  strconv.FormatInt(s.Account.ID, 10),
		"user_id":     strconv.FormatInt(writer.ID, 10),
		"webhook_id":  sub.ID,
		"delivery_id": webhooks.NewDeliveryID(),
		"replay_id":   webhooks.NewID(deliveries.ReplayIDPrefix),
		"listener_id": webhooks.NewID(webhooks.ListenerIDPrefix),
		"attempt_id":  webhooks.NewID(webhooks.ListenerAttemptIDPrefix),
		"token":       webhooks.NewID(webhooks.RelayTokenPrefix),
	}
	// Bodies that pass decoding where a route decodes before it looks at
	// its ids; every other route gets validBody().
	bodies := map[string]any{
		"POST /api/v3/accounts/:account_id/webhooks/listeners/:listener_id/attempts/:attempt_id/answer": map[string]any{"status_code": 200},
		"POST /api/v3/accounts/:account_id/webhooks/subscription/:webhook_id/secret/rotate":             map[string]any{"expire_previous_in_seconds": 60},
		"PUT /api/v3/accounts/:account_id/webhooks/subscription/:webhook_id/delivery-settings":          map[string]any{"on_outage": "hold"},
	}
	malformed := func(prefix string) []struct{ name, escaped string } {
		ids := []struct{ name, escaped string }{
			{"NUL", "%00"},
			{"InvalidUTF8", "%ff%fe"},
			{"DigitsThenNUL", "1%00"},
			{"NotANumber", "abc"},
			{"Negative", "-1"},
			{"Zero", "0"},
			{"OverflowsInt64", "99999999999999999999"},
			{"OverlongDigits", strings.Repeat("9", 1000)},
			{"EncodedSlash", "a%2Fb"},
		}
		if prefix == "" {
			return ids
		}
		return append(ids, []struct{ name, escaped string }{
			{"PrefixedNUL", prefix + "%00abc"},
			{"PrefixedInvalidUTF8", prefix + "%ff%fe"},
			{"PrefixedBrokenUTF8", prefix + "%c3%28"},
			{"PrefixedControlCharacter", prefix + "a%0Ab"},
			{"PrefixOnly", prefix},
			{"PrefixedOverlong", prefix + strings.Repeat("a", 1000)},
		}...)
	}

	tested := 0
	for _, r := range api.Routes(api.Deps{}) {
		params := routeParam.FindAllStringSubmatch(r.Path, -1)
		if len(params) == 0 {
			continue
		}
		route := r.Method + " " + r.Path
		body, ok := bodies[route]
		if !ok {
			body = validBody()
		}
		for _, p := range params {
			param := p[1]
			v, ok := valid[param]
			if !ok {
				t.Errorf("%s: no valid value for path parameter %s; add one to the table", route, param)
				continue
			}
			prefix := ""
			if i := strings.IndexByte(v, '_'); i >= 0 {
				prefix = v[:i+1]
			}
			for _, id := range malformed(prefix) {
				tested++
				t.Run(route+"/"+param+"/"+id.name, func(t *testing.T) {
					path := routeParam.ReplaceAllStringFunc(r.Path, func(m string) string {
						if m[1:] == param {
							return id.escaped
						}
						return valid[m[1:]]
					})
					resp := doJSON(t, r.Method, s.URL+path, s.Writer, body)
					requireErrorEnvelope(t, resp, http.StatusNotFound)
				})
			}
		}
	}
	if tested == 0 {
		t.Fatal("no route with a path parameter")
	}
	if logs := s.Logs.String(); strings.Contains(logs, "internal error") {
		t.Errorf("a malformed path id was logged as an internal error:\n%s", logs)
	}
}
