package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// concurrentResult is one response of a request sent from a goroutine.
type concurrentResult struct {
	code   int
	header http.Header
	body   []byte
	err    error

	reqHeader http.Header // what was sent, for the OpenAPI check
	reqBody   []byte
}

// sendAll sends every request at once (released together) and returns the
// results in request order. It never calls t.Fatal off the test goroutine.
func sendAll(t *testing.T, method string, urls []string, token string, bodies []any) []concurrentResult {
	t.Helper()
	results := make([]concurrentResult, len(urls))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r io.Reader
			if bodies != nil {
				results[i].reqBody, _ = json.Marshal(bodies[i])
				r = bytes.NewReader(results[i].reqBody)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, method, urls[i], r)
			if err != nil {
				results[i].err = err
				return
			}
			req.Header.Set("Authorization", "Token "+token)
			req.Header.Set("Content-Type", "application/json")
			results[i].reqHeader = req.Header.Clone()
			<-start
			resp, err := testHTTPClient.Do(req)
			if err != nil {
				results[i].err = err
				return
			}
			defer resp.Body.Close()
			results[i].code, results[i].header = resp.StatusCode, resp.Header
			results[i].body, results[i].err = io.ReadAll(resp.Body)
		}()
	}
	close(start)
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("request %d: %v", i, r.err)
		}
		if err := checkExchange(method, urls[i], r.reqHeader, r.reqBody, r.code, r.header, r.body); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	return results
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestUpdateSubscription_ConcurrentUpdatesNeverMix: each PUT replaces
// several fields; whatever order they commit in, every response and the
// final state carry one request's fields, never a mix.
func TestUpdateSubscription_ConcurrentUpdatesNeverMix(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	const n = 12
	bodies := make([]any, n)
	for i := range n {
		bodies[i] = map[string]any{
			"name": fmt.Sprintf("name-%d", i), "description": fmt.Sprintf("desc-%d", i),
			"client_url": fmt.Sprintf("https://%s/hook/%d", publicHost, i), "job_ids": []int{i + 1},
		}
	}
	results := sendAll(t, http.MethodPut, repeat(s.subURL(s.Account.ID, sub.ID), n), s.Writer, bodies)
	consistent := func(it subItem) bool {
		var i int
		if _, err := fmt.Sscanf(it.Name, "name-%d", &i); err != nil {
			return false
		}
		return it.Description == fmt.Sprintf("desc-%d", i) &&
			it.ClientURL == fmt.Sprintf("https://%s/hook/%d", publicHost, i) &&
			len(it.JobIDs) == 1 && it.JobIDs[0] == strconv.Itoa(i+1)
	}
	var stamps []string
	for _, r := range results {
		if r.code != http.StatusOK {
			t.Fatalf("PUT = %d: %s", r.code, r.body)
		}
		var env struct{ Data subItem }
		if err := json.Unmarshal(r.body, &env); err != nil {
			t.Fatal(err)
		}
		if !consistent(env.Data) {
			t.Errorf("response mixes fields: %+v", env.Data)
		}
		stamps = append(stamps, env.Data.UpdatedAt)
	}
	final := s.mustGetSub(t, sub.ID)
	if !consistent(final) {
		t.Fatalf("stored subscription mixes fields: %+v", final)
	}
	// updated_at: one distinct value per update, the last one stored.
	sort.Strings(stamps)
	for i := 1; i < len(stamps); i++ {
		if stamps[i] == stamps[i-1] {
			t.Errorf("two updates share updated_at %s", stamps[i])
		}
	}
	if final.UpdatedAt != stamps[len(stamps)-1] || stamps[0] <= sub.UpdatedAt {
		t.Errorf("final updated_at %s, responses %v, created %s: not monotonic", final.UpdatedAt, stamps, sub.UpdatedAt)
	}
}

// TestUpdateSubscription_ConcurrentPartialUpdatesNotLost: PUTs of
// different fields at once all take effect (no lost update).
func TestUpdateSubscription_ConcurrentPartialUpdatesNotLost(t *testing.T) {
	s := newSubsAPI(t, nil)
	for round := range 3 {
		sub := s.mustCreateSub(t, nil)
		bodies := []any{
			map[string]any{"name": "new name"},
			map[string]any{"description": "new description"},
			map[string]any{"job_ids": []int{99}},
			map[string]any{"event_types": []string{"job.run.started"}},
			map[string]any{"active": false},
		}
		results := sendAll(t, http.MethodPut, repeat(s.subURL(s.Account.ID, sub.ID), len(bodies)), s.Writer, bodies)
		for _, r := range results {
			if r.code != http.StatusOK {
				t.Fatalf("PUT = %d: %s", r.code, r.body)
			}
		}
		got := s.mustGetSub(t, sub.ID)
		if got.Name != "new name" || got.Description != "new description" || len(got.JobIDs) != 1 || got.JobIDs[0] != "99" ||
			len(got.EventTypes) != 1 || got.EventTypes[0] != "job.run.started" || got.Active {
			t.Fatalf("round %d: an update was lost: %+v", round, got)
		}
	}
}

// TestDeleteSubscription_ConcurrentDeletes: of simultaneous deletes of one
// subscription exactly one gets 200, the others 404.
func TestDeleteSubscription_ConcurrentDeletes(t *testing.T) {
	s := newSubsAPI(t, nil)
	for round := range 3 {
		sub := s.mustCreateSub(t, nil)
		n := 2 + round*2
		results := sendAll(t, http.MethodDelete, repeat(s.subURL(s.Account.ID, sub.ID), n), s.Writer, nil)
		counts := map[int]int{}
		for _, r := range results {
			counts[r.code]++
		}
		if counts[http.StatusOK] != 1 || counts[http.StatusNotFound] != n-1 {
			t.Fatalf("round %d: %d deletes gave %v, want one 200 and %d 404", round, n, counts, n-1)
		}
	}
}

// TestUpdateSubscription_UpdatedAtAlwaysAdvances: back-to-back updates
// (even within one clock tick) give strictly increasing updated_at.
func TestUpdateSubscription_UpdatedAtAlwaysAdvances(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	// A stored updated_at in the future (a clock step back) still advances.
	if _, err := s.DB.Pool.Exec(context.Background(),
		"UPDATE webhook_subscriptions SET updated_at = now() + interval '1 hour' WHERE id = $1", sub.ID); err != nil {
		t.Fatal(err)
	}
	prev := s.mustGetSub(t, sub.ID).UpdatedAt
	for i := range 10 {
		resp := doJSON(t, http.MethodPut, s.subURL(s.Account.ID, sub.ID), s.Writer, map[string]any{"name": "n" + strconv.Itoa(i)})
		requireStatus(t, resp, http.StatusOK)
		var got subItem
		resp.decodeData(t, &got)
		p, _ := strconv.ParseInt(prev, 10, 64)
		g, _ := strconv.ParseInt(got.UpdatedAt, 10, 64)
		if g <= p {
			t.Fatalf("update %d: updated_at %s did not advance past %s", i, got.UpdatedAt, prev)
		}
		prev = got.UpdatedAt
	}
}
