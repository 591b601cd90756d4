package model

import (
	"testing"

	"github.com/fabemu/fabemu/internal/params"
)

// TestSimConfigDocumented: every parameter of a synthetic run has a doc
// tag, so `fabemu config explain` and docs/parameters.md describe them all.
func TestSimConfigDocumented(t *testing.T) {
	if err := params.CheckDocumented(SimConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range Presets() {
		if err := p.Config.Validate(); err != nil {
			t.Errorf("preset %s: %v", p.Name, err)
		}
	}
}
