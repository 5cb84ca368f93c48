package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jobhooks/jobhooks"
)

const simulateUsage = `Simulates job runs against the API's ingestion endpoint, for demos: each run
sends job.run.started, waits, then ends with job.run.completed (Success) or,
with probability --error-rate, job.run.errored followed by job.run.completed
(runStatus Errored), as the job runner reports an errored run. Each event
carries a caller event id, so re-running is harmless.`

func runSimulate(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "simulate", simulateUsage)
	ef := addEventFlags(fs, env)
	runs := fs.Int("runs", 3, "number of runs")
	jobs := fs.Int("jobs", 2, "runs are spread over jobs --job .. --job+jobs-1")
	duration := fs.Duration("run-duration", 2*time.Second, "time between a run's start and its end")
	errorRate := fs.Float64("error-rate", 0.3, "fraction of runs that error")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	if *runs < 1 || *jobs < 1 || *errorRate < 0 || *errorRate > 1 {
		return fmt.Errorf("simulate: --runs and --jobs must be at least 1, --error-rate between 0 and 1")
	}
	firstJob := *ef.jobID
	baseRun := time.Now().Unix() * 100
	for i := range *runs {
		job := firstJob + int64(i%*jobs)
		*ef.jobID = job
		runID := baseRun + int64(i)
		started := time.Now()
		send := func(eventType string, ended time.Time, status string) error {
			body := ef.eventBody(eventType, runID, started, ended, fmt.Sprintf("run-%d-%s", runID, eventType))
			if status != "" {
				data := body["data"].(map[string]any)
				data["runStatus"], data["runStatusCode"], data["runStatusMessage"] = status, 20, "Database error: relation does not exist"
			}
			id, err := postEvent(ctx, env, *ef.api, body)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "job %d run %d %-18s %s\n", job, runID, eventType, id)
			return nil
		}
		if err := send(webhooks.EventRunStarted, time.Time{}, ""); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(*duration):
		}
		ended := time.Now()
		if rand.Float64() < *errorRate {
			if err := send(webhooks.EventRunErrored, ended, ""); err != nil {
				return err
			}
			if err := send(webhooks.EventRunCompleted, ended, webhooks.RunStatusErrored); err != nil {
				return err
			}
			continue
		}
		if err := send(webhooks.EventRunCompleted, ended, ""); err != nil {
			return err
		}
	}
	return nil
}
