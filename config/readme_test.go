package config_test

import (
	"os"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks/config"
)

// Every variable the binary reads is documented in README's configuration
// table, so adding a Config field without documenting it fails CI.
func TestREADME_DocumentsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatalf("read README.md: %v", err)
	}
	for _, name := range config.Names() {
		if !strings.Contains(string(readme), "| `"+name+"` |") {
			t.Errorf("README.md's configuration table has no row for %s", name)
		}
	}
}
