package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// outpostAPI calls Outpost's admin API (/api/v1) with its API key.
type outpostAPI struct {
	base   string // e.g. http://127.0.0.1:3334
	apiKey string
	http   *http.Client
}

func newOutpostAPI(base, apiKey string, senders int) outpostAPI {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = senders
	return outpostAPI{base: base, apiKey: apiKey, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// do sends body as JSON and returns an error unless the status is one of
// want.
func (a outpostAPI) do(ctx context.Context, method, path string, body any, want ...int) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("%s %s: encode: %w", method, path, err)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+"/api/v1"+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+a.apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if !slices.Contains(want, resp.StatusCode) {
		return fmt.Errorf("%s %s: status %d, want %v: %s", method, path, resp.StatusCode, want, bytes.TrimSpace(msg))
	}
	return nil
}

func (a outpostAPI) health(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("outpost health: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("outpost health: status %d", resp.StatusCode)
	}
	return nil
}

func (a outpostAPI) upsertTenant(ctx context.Context, tenant string) error {
	return a.do(ctx, http.MethodPut, "/tenants/"+tenant, map[string]any{}, http.StatusCreated, http.StatusOK)
}

// destination is a webhook destination of a tenant, and, when filter is
// set, the data its events must match (Outpost's destination filter).
type destination struct {
	tenant, id, url, secret string
	filter                  map[string]any
}

func (a outpostAPI) createDestination(ctx context.Context, d destination) error {
	body := map[string]any{
		"id": d.id, "type": "webhook", "topics": []string{"*"},
		"config":      map[string]string{"url": d.url},
		"credentials": map[string]string{"secret": d.secret},
	}
	if d.filter != nil {
		body["filter"] = d.filter
	}
	return a.do(ctx, http.MethodPost, "/tenants/"+d.tenant+"/destinations", body, http.StatusCreated)
}

// event is one publish request: to destination when it is set, else to
// every destination of the tenant whose topics and filter match.
type event struct {
	id, tenant, destination, jobID string
}

func (a outpostAPI) publish(ctx context.Context, e event) error {
	body := map[string]any{
		"id": e.id, "tenant_id": e.tenant, "topic": "job.run.completed",
		"data": jobRunData(e.jobID),
	}
	if e.destination != "" {
		body["destination_id"] = e.destination
	}
	return a.do(ctx, http.MethodPost, "/publish", body, http.StatusAccepted)
}

// jobRunData is the same data object the webhooks bench sends for a
// job.run.completed event, so both services carry bodies of one size.
func jobRunData(jobID string) map[string]any {
	return map[string]any{
		"jobId": jobID, "jobName": "Nightly", "runId": "1",
		"environmentId": "7", "environmentName": "Production", "toolVersion": "1.9.0",
		"projectName": "Analytics", "projectId": "3",
		"runStatus": "Success", "runStatusCode": 10, "runStatusMessage": "None", "runReason": "scheduled",
		"runStartedAt": "2026-01-01T00:00:00Z", "runFinishedAt": "2026-01-01T00:05:00Z",
	}
}
