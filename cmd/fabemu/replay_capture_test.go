package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/tracefmt/pcap"
)

// TestReplayCapturePcapOut: replay of the capture fixture writes every
// delivered copy as pcapng; a failing run keeps the previous file and
// leaves no temporary file; an unwritable path is an error naming it.
func TestReplayCapturePcapOut(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.pcapng")
	base := []string{"replay", "--trace", captureFixture, "--compression", "1"}
	if _, err := run(t, append(base, "--pcap-out", out)...); err != nil {
		t.Fatal(err)
	}
	rd, err := pcap.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := rd.Next(); err != nil {
			break
		}
		n++
	}
	rd.Close()
	if n != 44 { // 32 unicast frames and 4 broadcasts to 3 other hosts each
		t.Fatalf("%d frames in the output, want 44", n)
	}
	good, _ := os.ReadFile(out)
	badMap := writeTemp(t, "bad.csv", "02:00:5e:10:00:01,1\nnot-an-address,2\n")
	_, err = run(t, append(base, "--pcap-out", out, "--map", badMap)...)
	if err == nil || !strings.Contains(err.Error(), "bad.csv:2:") {
		t.Fatalf("bad map: %v", err)
	}
	if now, _ := os.ReadFile(out); string(now) != string(good) {
		t.Fatal("a failed run replaced the previous output")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
	missing := filepath.Join(dir, "no", "such", "dir", "x.pcapng")
	if _, err := run(t, append(base, "--pcap-out", missing)...); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("unwritable path: %v", err)
	}
}
