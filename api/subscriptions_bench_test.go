package api_test

import (
	"net/http"
	"testing"
)

// Benchmarks of the subscription endpoints through HTTP on loopback over
// real PostgreSQL: go test ./api -run '^$' -bench Subscription -benchtime 3s

func BenchmarkCreateSubscription(b *testing.B) {
	s := newSubsAPI(b, nil)
	url, body := s.subsURL(s.Account.ID), validBody()
	b.ResetTimer()
	for b.Loop() {
		if resp := doJSON(b, http.MethodPost, url, s.Writer, body); resp.Code != http.StatusCreated {
			b.Fatalf("create = %d: %s", resp.Code, resp.Body)
		}
	}
}

func BenchmarkGetSubscription(b *testing.B) {
	s := newSubsAPI(b, nil)
	url := s.subURL(s.Account.ID, s.mustCreateSub(b, nil).ID)
	b.ResetTimer()
	for b.Loop() {
		if resp := doJSON(b, http.MethodGet, url, s.Writer, nil); resp.Code != http.StatusOK {
			b.Fatalf("get = %d: %s", resp.Code, resp.Body)
		}
	}
}

func BenchmarkListSubscriptions100(b *testing.B) {
	s := newSubsAPI(b, nil)
	for range 100 {
		s.mustCreateSub(b, nil)
	}
	url := s.subsURL(s.Account.ID) + "?limit=100"
	b.ResetTimer()
	for b.Loop() {
		if resp := doJSON(b, http.MethodGet, url, s.Writer, nil); resp.Code != http.StatusOK {
			b.Fatalf("list = %d: %s", resp.Code, resp.Body)
		}
	}
}

func BenchmarkUpdateSubscription(b *testing.B) {
	s := newSubsAPI(b, nil)
	url := s.subURL(s.Account.ID, s.mustCreateSub(b, nil).ID)
	body := map[string]any{"name": "renamed", "job_ids": []int{1, 2, 3}}
	b.ResetTimer()
	for b.Loop() {
		if resp := doJSON(b, http.MethodPut, url, s.Writer, body); resp.Code != http.StatusOK {
			b.Fatalf("update = %d: %s", resp.Code, resp.Body)
		}
	}
}
