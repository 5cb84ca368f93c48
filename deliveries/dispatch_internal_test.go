package deliveries

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
)

// fakeTemporal answers workflow starts from a script and lists every
// search attribute as registered (another process registered them; the
// frontend has not refreshed its namespace cache yet).
type fakeTemporal struct {
	client.Client
	startErrs []error // one per start, then success
	starts    int
}

func (f *fakeTemporal) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	f.starts++
	if f.starts <= len(f.startErrs) {
		return nil, f.startErrs[f.starts-1]
	}
	return fakeRun{}, nil
}

func (f *fakeTemporal) OperatorService() operatorservice.OperatorServiceClient { return registered{} }

type fakeRun struct{ client.WorkflowRun }

type registered struct {
	operatorservice.OperatorServiceClient
}

func (registered) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	all := map[string]enums.IndexedValueType{}
	for name, typ := range searchAttributes {
		all[name] = typ
	}
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: all}, nil
}

// A start that meets search attributes the frontend does not know yet is
// retried until its namespace cache catches up; any other error is not.
func TestExecute_RetriesWhileSearchAttributesPropagate(t *testing.T) {
	unknown := serviceerror.NewInvalidArgument("search attribute WebhookId is not defined")
	tests := []struct {
		name       string
		errs       []error
		wantStarts int
		wantErr    bool
	}{
		{"StartsAtOnce", nil, 1, false},
		{"KnownAfterThreeRefreshes", []error{unknown, unknown, unknown}, 4, false},
		{"OtherErrorsAreNotRetried", []error{serviceerror.NewUnavailable("down")}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := &fakeTemporal{startErrs: tt.errs}
			s := &Service{temporal: tc, taskQueue: "q", namespace: "default"}
			_, err := s.execute(context.Background(), client.StartWorkflowOptions{ID: "delivery/x/y"}, DeliveryWorkflowName, DeliveryInput{})
			if (err != nil) != tt.wantErr || tc.starts != tt.wantStarts {
				t.Errorf("err %v after %d starts; want error %v after %d", err, tc.starts, tt.wantErr, tt.wantStarts)
			}
			var unavailable *serviceerror.Unavailable
			if tt.wantErr && !errors.As(err, &unavailable) {
				t.Errorf("err %v, want the start's own error", err)
			}
		})
	}
}
