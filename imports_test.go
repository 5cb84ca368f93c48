package webhooks_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestServices_DoNotImportActivities keeps the services and front ends off
// the worker's activities: what they share with the worker (header names,
// notice kinds, the notification secret's binding, a test delivery) is the
// wire contract in this package. Only the packages' own files count; their
// tests may drive the worker.
func TestServices_DoNotImportActivities(t *testing.T) {
	const activities = "github.com/jobhooks/jobhooks/activities"
	for _, dir := range []string{"listeners", "incidents", "ui", "dispatch"} {
		t.Run(dir, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(dir, "*.go"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no Go files in %s (%v)", dir, err)
			}
			fset := token.NewFileSet()
			for _, file := range files {
				if strings.HasSuffix(file, "_test.go") {
					continue
				}
				f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
				if err != nil {
					t.Fatalf("parse %s: %v", file, err)
				}
				for _, imp := range f.Imports {
					if path, _ := strconv.Unquote(imp.Path.Value); path == activities {
						t.Errorf("%s imports %s; use the wire contract in package webhooks", file, activities)
					}
				}
			}
		})
	}
}
