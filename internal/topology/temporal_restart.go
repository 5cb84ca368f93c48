package topology

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// Kill ends the server with SIGKILL, as a crash would.
func (s *TemporalServer) Kill() error {
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	err := <-s.done
	s.done <- err
	return nil
}

// Restart starts the stopped server again with the same configuration,
// data and ports, and returns once it serves namespace.
func (s *TemporalServer) Restart(ctx context.Context, namespace string) error {
	logFile, err := os.OpenFile(filepath.Join(s.Dir, "temporal-server.log"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.cmd.Path, s.cmd.Args[1:]...)
	cmd.Env = s.cmd.Env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("restart Temporal server: %w", err)
	}
	s.cmd, s.done = cmd, make(chan error, 1)
	go func() { s.done <- cmd.Wait(); logFile.Close() }()
	return s.waitReady(ctx, namespace)
}

// WorkflowHistory is one workflow run and the events in its history.
type WorkflowHistory struct {
	WorkflowID, RunID string
	Open              bool
	Events            int64
}

// WorkflowHistories lists every run in namespace, open or closed, with its
// history length: from visibility for closed runs, from the run itself for
// open ones (visibility may lag).
func WorkflowHistories(ctx context.Context, address, namespace string) ([]WorkflowHistory, error) {
	c, err := client.Dial(client.Options{HostPort: address, Namespace: namespace, Logger: quietLogger()})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var (
		out   []WorkflowHistory
		token []byte
	)
	for page := 0; page < 1000; page++ {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list workflows: %w", err)
		}
		for _, e := range resp.Executions {
			h, err := history(ctx, c, e)
			if err != nil {
				return nil, err
			}
			out = append(out, h)
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return out, nil
		}
	}
	return out, fmt.Errorf("list workflows: more than 1000 pages")
}

func history(ctx context.Context, c client.Client, e *workflowpb.WorkflowExecutionInfo) (WorkflowHistory, error) {
	h := WorkflowHistory{WorkflowID: e.Execution.WorkflowId, RunID: e.Execution.RunId, Events: e.HistoryLength, Open: e.CloseTime == nil}
	if !h.Open {
		return h, nil
	}
	d, err := c.DescribeWorkflowExecution(ctx, h.WorkflowID, h.RunID)
	if err != nil {
		return h, fmt.Errorf("describe %s: %w", h.WorkflowID, err)
	}
	h.Events = d.WorkflowExecutionInfo.HistoryLength
	return h, nil
}
