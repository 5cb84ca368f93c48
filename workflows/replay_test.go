package workflows_test

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/acme/webhooks/deliveries"
	"github.com/acme/webhooks/workflows"
)

// TestReplay_RecordedHistories replays histories recorded from real runs on
// the dev server (see worker.TestWriteReplayHistories): a change to workflow
// code that would break running workflows fails here.
func TestReplay_RecordedHistories(t *testing.T) {
	tests := []struct{ file, workflowName string }{
		{"event.json", deliveries.EventWorkflowName},
		{"deliver_retried.json", deliveries.DeliveryWorkflowName},
		{"deliver_failed.json", deliveries.DeliveryWorkflowName},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(workflows.Event, workflow.RegisterOptions{Name: deliveries.EventWorkflowName})
			r.RegisterWorkflowWithOptions(workflows.Deliver, workflow.RegisterOptions{Name: deliveries.DeliveryWorkflowName})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", tt.file)); err != nil {
				t.Errorf("replay %s: %v", tt.file, err)
			}
		})
	}
}
