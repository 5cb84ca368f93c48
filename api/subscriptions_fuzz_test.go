package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzSubscriptionRequest sends arbitrary bodies to create and update: the
// API answers with the envelope and a 2xx or 4xx, never a 500 or a panic,
// and a refused request stores nothing.
//
//	go test ./api -run '^$' -fuzz FuzzSubscriptionRequest -fuzztime 60s -parallel 1
func FuzzSubscriptionRequest(f *testing.F) {
	s := newSubsAPI(f, nil)
	target := s.mustCreateSub(f, nil)
	seeds := []string{
		`{"name":"n","client_url":"https://hooks.example.com/h","event_types":["job.run.started"]}`,
		`{"name":"n","description":"d","client_url":"https://hooks.example.com/h","event_types":["job.run.completed","job.run.errored"],"job_ids":[1,"2"],"active":false}`,
		`{"name":"","client_url":"http://127.0.0.1/","event_types":[]}`,
		`{"job_ids":["9223372036854775808", -1, 1.5, 1e3, null, true]}`,
		`{"name":"\u0000","client_url":"https://[::1]/","event_types":["x"]}`,
		`{"client_url":"http://0x7f.1/","name":5}`,
		`{"client_url":"https://user@hooks.example.com/","event_types":null,"id":"wsu_x"}`,
		`[]`, `null`, `"s"`, `{`, `{} {}`, ``,
	}
	for _, seed := range seeds {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body string, update bool) {
		before := s.subscriptionRowCount(t)
		method, url := http.MethodPost, s.subsURL(s.Account.ID)
		if update {
			method, url = http.MethodPut, s.subURL(s.Account.ID, target.ID)
		}
		resp := doJSON(t, method, url, s.Writer, body)
		switch resp.Code {
		case http.StatusOK, http.StatusCreated:
			if !resp.Env.Status.IsSuccess {
				t.Fatalf("%d without is_success: %s", resp.Code, resp.Body)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			requireErrorEnvelope(t, resp, resp.Code)
			if after := s.subscriptionRowCount(t); after != before {
				t.Fatalf("refused request changed the row count from %d to %d", before, after)
			}
		default:
			t.Fatalf("%s %q = %d: %s", method, body, resp.Code, resp.Body)
		}
		if !json.Valid(resp.Body) {
			t.Fatalf("response is not JSON: %q", resp.Body)
		}
	})
}
