package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jobhooks/jobhooks"
)

const emitUsage = `Sends one job-run event to the API's ingestion endpoint
(POST /internal/v1/job-run-events) with INTERNAL_API_TOKEN, and prints the
event id. Every active subscription of the account that matches gets it.
Without INTERNAL_API_TOKEN it uses the token webhooks dev generated in
WEBHOOKS_DATA_DIR.`

// eventFlags are the run fields emit and simulate share.
type eventFlags struct {
	api       *string
	account   *int64
	eventID   *string
	jobID     *int64
	jobName   *string
	runID     *int64
	envName   *string
	project   *string
	version   *string
	toolName  *string
	reason    *string
	statusMsg *string
}

func addEventFlags(fs *flag.FlagSet, env *environment) eventFlags {
	defaultAPI := "http://127.0.0.1:8080"
	if a := env.getenv("HTTP_ADDR"); a != "" {
		defaultAPI = "http://" + a
	}
	return eventFlags{
		api:       fs.String("api", defaultAPI, "base URL of the API"),
		account:   fs.Int64("account", 1, "account id"),
		eventID:   fs.String("event-id", "", "caller event id (idempotency key); empty: a new event each time"),
		jobID:     fs.Int64("job", 1, "job id"),
		jobName:   fs.String("job-name", "Nightly build", "job name"),
		runID:     fs.Int64("run", 0, "run id (0: derived from the clock)"),
		envName:   fs.String("environment", "Production", "environment name"),
		project:   fs.String("project", "Analytics", "project name"),
		version:   fs.String("tool-version", "1.9.2", "version of the job tool"),
		toolName:  fs.String("tool", "dbt", "the tool's short name (the payload's <tool>Version key)"),
		reason:    fs.String("reason", "Kicked off from the CLI", "run reason"),
		statusMsg: fs.String("status-message", "", "run status message"),
	}
}

// eventBody returns the ingestion body of one event of a run.
func (f eventFlags) eventBody(eventType string, runID int64, started, ended time.Time, callerID string) map[string]any {
	status, code := webhooks.DefaultRunStatus(eventType)
	msg := *f.statusMsg
	if msg == "" {
		msg = status
	}
	data := map[string]any{
		"jobId": *f.jobID, "jobName": *f.jobName, "runId": runID, "environmentId": 1,
		"environmentName": *f.envName, *f.toolName + "Version": *f.version, "projectName": *f.project,
		"projectId": 1, "runStatus": status, "runStatusCode": code, "runStatusMessage": msg,
		"runReason": *f.reason, "runStartedAt": started.UTC().Format(webhooks.RunTimeFormat),
	}
	switch eventType {
	case webhooks.EventRunCompleted:
		data["runFinishedAt"] = ended.UTC().Format(webhooks.RunTimeFormat)
	case webhooks.EventRunErrored:
		data["runErroredAt"] = ended.UTC().Format(webhooks.RunTimeFormat)
	}
	body := map[string]any{"accountId": *f.account, "eventType": eventType, "data": data}
	if callerID != "" {
		body["eventId"] = callerID
	}
	return body
}

func runEmit(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "emit", emitUsage)
	ef := addEventFlags(fs, env)
	eventType := fs.String("type", webhooks.EventRunCompleted, "event type: job.run.started, job.run.completed or job.run.errored")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	runID := *ef.runID
	if runID == 0 {
		runID = time.Now().Unix()
	}
	now := time.Now()
	id, err := postEvent(ctx, env, *ef.api, ef.eventBody(*eventType, runID, now.Add(-5*time.Minute), now, *ef.eventID))
	if err != nil {
		return err
	}
	fmt.Fprintln(env.stdout, id)
	return nil
}

// postEvent sends one event to the ingestion endpoint and returns its id.
func postEvent(ctx context.Context, env *environment, api string, body map[string]any) (string, error) {
	token := env.getenv("INTERNAL_API_TOKEN")
	if token == "" {
		// What a `webhooks dev` with the same WEBHOOKS_DATA_DIR generated.
		token = devInternalToken(env.getenv)
	}
	if token == "" {
		return "", fmt.Errorf("INTERNAL_API_TOKEN is required (none set, and no %s in WEBHOOKS_DATA_DIR %s, where webhooks dev keeps the one it generates)",
			devInternalTokenFile, devDataDir(env.getenv))
	}
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(api, "/")+"/internal/v1/job-run-events", bytes.NewReader(b))
	if err != nil {
		return "", fmt.Errorf("ingestion request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("post event: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("post event: %s: %s", resp.Status, bytes.TrimSpace(raw))
	}
	var out struct {
		Data struct {
			EventID string `json:"eventId"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", fmt.Errorf("post event: bad response: %w", err)
	}
	return out.Data.EventID, nil
}
