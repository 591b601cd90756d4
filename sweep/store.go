package sweep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/fabemu/fabemu/experiment"
	"github.com/fabemu/fabemu/internal/inputfile"
)

// Schemas of the result files.
const (
	PointSchema   = "fabemu.sweep.point/v1"
	TrailerSchema = "fabemu.sweep.trailer/v1"
	MergedSchema  = "fabemu.sweep.merged/v1"
)

// maxPoints bounds a plan's points as a result file states them.
const maxPoints = 1 << 22

// Record is one line of a shard's result file: one point's result,
// self-describing (plan, point, configuration hash, seed) and checked by
// the SHA-256 of its result's bytes.
type Record struct {
	Schema     string          `json:"schema"`
	Sweep      string          `json:"sweep"`
	Plan       string          `json:"plan"`
	Total      int             `json:"points"`
	Index      int             `json:"index"`
	ID         string          `json:"id"`
	ConfigHash string          `json:"config_hash"`
	Seed       uint64          `json:"seed"`
	Result     json.RawMessage `json:"result"`
	SHA256     string          `json:"sha256"`
	// Build is the identity of the fabemu binary that ran the point
	// (module version and VCS revision); merge refuses to mix builds.
	Build string `json:"build,omitempty"`
	// WallSeconds is the point's wall time (machine-dependent; for
	// status and ETA only, left out of merged results).
	WallSeconds float64 `json:"wall_seconds,omitempty"`
}

// Trailer is the last line of a finished shard's file: its record count
// and the SHA-256 of every byte before it.
type Trailer struct {
	Schema  string `json:"schema"`
	Plan    string `json:"plan"`
	Shard   int    `json:"shard"`
	Shards  int    `json:"shards"`
	Records int    `json:"records"`
	// Sweep, Quick and Experiment describe the plan, so that merge and
	// plot need no spec: the experiment's definition as it ran.
	Sweep      string          `json:"sweep"`
	Quick      bool            `json:"quick"`
	Experiment json.RawMessage `json:"experiment"`
	// Build is the identity of the binary that closed the file.
	Build  string `json:"build,omitempty"`
	SHA256 string `json:"sha256"`
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// ShardFile is the result file of shard i of n in dir.
func ShardFile(dir string, i, n int) string {
	return filepath.Join(dir, fmt.Sprintf("shard-%04d-of-%04d.jsonl", i, n))
}

// shardFile is a result file as read back.
type shardFile struct {
	path    string
	records []Record
	// valid is the length of the prefix of whole, checked records.
	valid int64
	// complete: a valid trailer closes the file.
	complete bool
	trailer  Trailer
	// problem says why the file is not complete (empty if it is).
	problem string
	// corrupt: the problem is not the end of a run that stopped (a
	// last line cut short, or no trailer yet) but a bad line before
	// it: concurrent writers, an edited file, a disk fault.
	corrupt bool
	// badLine is the line of a corrupt file's problem.
	badLine int
}

// readShardFile reads a result file: the records up to the first line
// that is cut or fails its checksum, and whether a trailer closes it.
// Only an unreadable file is an error; a partial one is reported in
// problem.
func readShardFile(path string) (*shardFile, error) {
	data, err := inputfile.ReadFile(path, inputfile.ResultLimit)
	if err != nil {
		return nil, err
	}
	f := &shardFile{path: path}
	off := 0
	line := 0
	for off < len(data) {
		line++
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			f.problem = fmt.Sprintf("line %d is cut short (a killed shard?)", line)
			return f, nil
		}
		bad := func(format string, args ...any) (*shardFile, error) {
			f.problem = fmt.Sprintf(format, args...)
			f.corrupt, f.badLine, f.complete = true, line, false
			return f, nil
		}
		b := data[off : off+nl]
		var head struct {
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return bad("line %d: not JSON: %v", line, err)

		}
		switch head.Schema {
		case PointSchema:
			if f.complete {
				return bad("line %d: a record after the trailer", line)
			}
			var r Record
			if err := json.Unmarshal(b, &r); err != nil {
				return bad("line %d: %v", line, err)
			}
			if r.Total < 1 || r.Total > maxPoints || r.Index < 0 || r.Index >= r.Total {
				return bad("line %d (point %s): index %d of %d points: want 0 <= index < points <= %d", line, r.ID, r.Index, r.Total, maxPoints)
			}
			if sum(r.Result) != r.SHA256 {
				return bad("line %d (point %s): checksum mismatch", line, r.ID)
			}
			f.records = append(f.records, r)
		case TrailerSchema:
			var t Trailer
			if err := json.Unmarshal(b, &t); err != nil {
				return bad("line %d: %v", line, err)
			}
			if t.Records != len(f.records) || t.SHA256 != sum(data[:off]) {
				return bad("line %d: trailer says %d records, checksum %.12s; file has %d records, checksum %.12s",
					line, t.Records, t.SHA256, len(f.records), sum(data[:off]))
			}
			f.trailer, f.complete = t, true
		default:
			return bad("line %d: schema %q: want %s or %s", line, head.Schema, PointSchema, TrailerSchema)
		}
		off += nl + 1
		if !f.complete {
			f.valid = int64(off)
		}
	}
	if !f.complete {
		f.problem = "no trailer: the shard has not finished (still running, or killed)"
	}
	return f, nil
}

// ResultFiles lists the shard result files in dir (shard-*.jsonl), sorted: the
// files a merge or status reads; other files there (a merged result, the
// plan's sweep.json) are not inputs of a merge.
func ResultFiles(dir string) ([]string, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	fs, err := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(fs)
	return fs, nil
}

// decodeResult decodes a record's result.
func decodeResult(r *Record, file string) (*experiment.PointResult, error) {
	var pr experiment.PointResult
	if err := json.Unmarshal(r.Result, &pr); err != nil {
		return nil, fmt.Errorf("%s: point %s: result: %w", file, r.ID, err)
	}
	return &pr, nil
}
