package experiment

import (
	"strings"
	"testing"
)

// TestFileSafe: a group name from an experiment's rows becomes part of a
// plot's file name; it must not leave the plot's directory or hide it.
func TestFileSafe(t *testing.T) {
	for in, want := range map[string]string{
		"../../evil": "_._.._evil",
		"torus 8x8":  "torus_8x8",
		".hidden":    "_hidden",
		"":           "_",
		"k=16/4":     "k_16_4",
		"min64-recn": "min64-recn",
	} {
		got := fileSafe(in)
		if got != want || strings.ContainsRune(got, '/') {
			t.Errorf("fileSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
