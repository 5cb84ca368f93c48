package workflows_test

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/jobhooks/jobhooks/workflows"
)

// TestReplay_RecordedHistories replays the recorded history of each
// workflow type (testdata, written by the worker package's
// TestHistories_ReplayWithTheCurrentCode) with the current code: a change
// that would break workflows in flight fails here. Change shipped workflow
// code with workflow.GetVersion.
func TestReplay_RecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) != 6 {
		t.Fatalf("want the 6 recorded histories (shard, lane, test delivery, replay, purge, sweep), found %v (%v)", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			replayer := worker.NewWorkflowReplayer()
			workflows.RegisterAll(replayer)
			if err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, file); err != nil {
				t.Fatalf("replay %s: %v", file, err)
			}
		})
	}
}
