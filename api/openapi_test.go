package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks/api"
)

type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

var ginParam = regexp.MustCompile(`[:*]([A-Za-z_][A-Za-z0-9_]*)`)

// TestOpenAPI_MatchesRoutes: every route the server registers is in the
// document and every documented operation is a registered route. The web
// UI (HTML pages, only mounted when Deps.UI is set) is not part of the API.
func TestOpenAPI_MatchesRoutes(t *testing.T) {
	var doc openAPIDoc
	if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi = %q, want 3.x", doc.OpenAPI)
	}
	registered := map[string]bool{}
	for _, r := range api.Routes(api.Deps{}) {
		registered[r.Method+" "+ginParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
			var o struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(op, &o); err != nil || len(o.Responses) == 0 {
				t.Errorf("%s %s: operation has no responses", method, path)
			}
		}
	}
	var missing, extra []string
	for r := range registered {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for d := range documented {
		if !registered[d] {
			extra = append(extra, d)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from api/openapi.json:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("documented operations that are not routes:\n  %s", strings.Join(extra, "\n  "))
	}
}

// TestOpenAPI_RefsResolve: every "$ref" names a schema the document defines.
func TestOpenAPI_RefsResolve(t *testing.T) {
	var doc openAPIDoc
	if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`"\$ref":\s*"([^"]+)"`).FindAllSubmatch(api.OpenAPIDocument(), -1)
	if len(refs) == 0 {
		t.Fatal("no $refs found")
	}
	for _, m := range refs {
		name, ok := strings.CutPrefix(string(m[1]), "#/components/schemas/")
		if _, defined := doc.Components.Schemas[name]; !ok || !defined {
			t.Errorf("unresolved $ref %s", m[1])
		}
	}
}

func TestOpenAPI_Served(t *testing.T) {
	a := newTestAPI(t)
	for _, path := range []string{"/api/openapi.json", "/api/openapi.json/"} {
		resp := doJSON(t, http.MethodGet, a.URL+path, "", nil)
		if resp.Code != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("GET %s = %d %s", path, resp.Code, resp.Header.Get("Content-Type"))
		}
		if !bytes.Equal(resp.Body, api.OpenAPIDocument()) {
			t.Fatalf("GET %s does not serve the embedded document", path)
		}
	}
}

// TestOpenAPI_DocumentIsValid: kin-openapi loads and validates the document
// (the API tests check every exchange against it).
func TestOpenAPI_DocumentIsValid(t *testing.T) {
	if _, err := openAPI(); err != nil {
		t.Fatal(err)
	}
}
