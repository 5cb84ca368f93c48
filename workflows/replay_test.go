package workflows_test

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

// TestReplay_RecordedHistories replays histories recorded from real runs on
// the dev server (see worker.TestWriteReplayHistories): a change to workflow
// code that would break running workflows fails here.
func TestReplay_RecordedHistories(t *testing.T) {
	// legacy_*: histories of the one-workflow-per-delivery fan-out, which
	// workflows in flight during an upgrade have; the current code must
	// still replay them.
	tests := []struct{ file, workflowName string }{
		{"event_handoff.json", deliveries.EventWorkflowName},
		// The first attempts as one local activity each, as event workflows
		// started before AttemptDeliveries recorded them.
		{"event_handoff_per_delivery.json", deliveries.EventWorkflowName},
		{"deliver_handoff.json", deliveries.DeliveryWorkflowName},
		{"legacy_event.json", deliveries.LegacyEventWorkflowName},
		{"legacy_deliver_retried.json", deliveries.DeliveryWorkflowName},
		{"legacy_deliver_failed.json", deliveries.DeliveryWorkflowName},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(workflows.Event, workflow.RegisterOptions{Name: deliveries.EventWorkflowName})
			r.RegisterWorkflowWithOptions(workflows.LegacyEvent, workflow.RegisterOptions{Name: deliveries.LegacyEventWorkflowName})
			r.RegisterWorkflowWithOptions(workflows.Deliver, workflow.RegisterOptions{Name: deliveries.DeliveryWorkflowName})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", tt.file)); err != nil {
				t.Errorf("replay %s: %v", tt.file, err)
			}
		})
	}
}
