package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadShardFile feeds arbitrary bytes to the result-file reader: it
// must never panic, and whatever it keeps must pass its checksums.
func FuzzReadShardFile(f *testing.F) {
	rec := `{"schema":"fabemu.sweep.point/v1","sweep":"s","plan":"p","points":2,"index":0,"id":"row:A","config_hash":"c","seed":1,"result":{},"sha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}` + "\n"
	f.Add([]byte(rec))
	f.Add([]byte(rec + `{"schema":"fabemu.sweep.trailer/v1","plan":"p","shard":0,"shards":1,"records":1,"sha256":"x"}` + "\n"))
	f.Add([]byte(rec[:40]))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "shard-0000-of-0001.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := readShardFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if sf.valid > int64(len(data)) {
			t.Fatalf("valid prefix %d beyond %d bytes", sf.valid, len(data))
		}
		for _, r := range sf.records {
			if sum(r.Result) != r.SHA256 {
				t.Fatalf("kept a record failing its checksum: %s", r.ID)
			}
		}
		if !sf.complete && sf.problem == "" {
			t.Fatal("an incomplete file without a reason")
		}
		if _, err := Merge(filepath.Dir(path)); err != nil && !strings.Contains(err.Error(), "shard") && !strings.Contains(err.Error(), "point") {
			t.Fatalf("merge error names neither file nor point: %v", err)
		}
	})
}

// FuzzReadMerged feeds arbitrary bytes to the merged-result reader.
func FuzzReadMerged(f *testing.F) {
	f.Add([]byte(`{"schema":"fabemu.sweep.merged/v1","sweep":"s","plan":"p","quick":false,"experiment":{},"points":[]}`))
	f.Add([]byte(`{"schema":"other"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "merged.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ReadMerged(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if _, err := m.Result(path); err != nil && !strings.Contains(err.Error(), path) {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
