package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/jobhooks/jobhooks/workflows"
)

// searchAttributes are the custom search attributes the workflows carry.
var searchAttributes = map[string]enums.IndexedValueType{
	workflows.SearchAccountID.GetName(): enums.INDEXED_VALUE_TYPE_INT,
	workflows.SearchWebhookID.GetName(): enums.INDEXED_VALUE_TYPE_KEYWORD,
}

// EnsureSearchAttributes registers the missing custom search attributes
// through the operator service, so a fresh dev server and an existing
// cluster both work, and waits until the namespace lists them.
func EnsureSearchAttributes(ctx context.Context, tc client.Client, namespace string) error {
	ops := tc.OperatorService()
	missing, err := missingSearchAttributes(ctx, ops, namespace)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register search attributes: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		missing, err = missingSearchAttributes(ctx, ops, namespace)
		if err == nil && len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("search attributes still missing after registration: %v", missing)
}

func missingSearchAttributes(ctx context.Context, ops operatorservice.OperatorServiceClient, namespace string) (map[string]enums.IndexedValueType, error) {
	resp, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enums.IndexedValueType{}
	for name, typ := range searchAttributes {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			missing[name] = typ
		}
	}
	return missing, nil
}

// missingSearchAttributeError reports whether a start failed because the
// namespace does not know our search attributes yet (an API started before
// any worker on a fresh cluster).
func missingSearchAttributeError(err error) bool {
	var invalid *serviceerror.InvalidArgument
	return errors.As(err, &invalid) && strings.Contains(strings.ToLower(invalid.Error()), "search attribute")
}

// OperatorAPIUnavailable reports whether err means the operator service may
// not be used here (permission denied or not implemented).
func OperatorAPIUnavailable(err error) bool {
	var denied *serviceerror.PermissionDenied
	var unimplemented *serviceerror.Unimplemented
	return errors.As(err, &denied) || errors.As(err, &unimplemented)
}
