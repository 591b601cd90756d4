package fabric

import (
	"fmt"
	"strings"
)

// ArchInfo describes one switch architecture fabric.switch may name.
type ArchInfo struct {
	Name           string
	outputBuffered bool
}

func lookupArch(name string) (ArchInfo, error) {
	for _, a := range []ArchInfo{{"cioq", true}, {"iq", false}} {
		if a.Name == name {
			return a, nil
		}
	}
	return ArchInfo{}, fmt.Errorf("unknown switch architecture %q; known: cioq, iq", name)
}

func parseAllocator(spec string) (string, error) {
	if strings.TrimSpace(spec) != "rr" {
		return "", fmt.Errorf("unknown allocator %q; known: rr", spec)
	}
	return "rr", nil
}
