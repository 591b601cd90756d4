package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/experiment"
	"github.com/fabemu/fabemu/internal/inputfile"
)

// Merged is a sweep's merged result: the experiment's definition and
// every point's result in plan order. It holds nothing that depends on
// the machine or on the sharding, so every sharding gives the same bytes.
type Merged struct {
	Schema string `json:"schema"`
	Sweep  string `json:"sweep"`
	Plan   string `json:"plan"`
	Quick  bool   `json:"quick"`
	// Experiment is the definition the points ran (an embedded one, a
	// file, or a grid written as one).
	Experiment json.RawMessage `json:"experiment"`
	// Build is the identity of the fabemu binary that ran the points
	// (several, comma-separated, only when merged with
	// --allow-mixed-versions).
	Build  string        `json:"build,omitempty"`
	Points []MergedPoint `json:"points"`
}

// MergedPoint is one point of a merged result.
type MergedPoint struct {
	Index      int             `json:"index"`
	ID         string          `json:"id"`
	ConfigHash string          `json:"config_hash"`
	Seed       uint64          `json:"seed"`
	Result     json.RawMessage `json:"result"`
	SHA256     string          `json:"sha256"`
}

// MergeOptions control a merge.
type MergeOptions struct {
	// AllowMixedVersions merges points run by different builds of
	// fabemu (refused by default: a point's result may depend on the
	// code that ran it).
	AllowMixedVersions bool
}

// Merge reads every shard result file in dirs and checks that they are
// all finished, belong to one plan, were run by one build of fabemu and
// hold every point exactly once; it names the missing points and the
// files of a duplicate.
func Merge(dirs ...string) (*Merged, error) { return MergeWith(MergeOptions{}, dirs...) }

// MergeWith is Merge with options.
func MergeWith(opt MergeOptions, dirs ...string) (*Merged, error) {
	var files []string
	for _, d := range dirs {
		fs, err := ResultFiles(d)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no shard result files (shard-*.jsonl)", strings.Join(dirs, ", "))
	}
	var m *Merged
	var points []*MergedPoint
	from := map[int]string{}
	total := -1
	var planFile string
	builds := map[string]string{} // build -> first file with it
	var buildOrder []string
	for _, path := range files {
		f, err := readShardFile(path)
		if err != nil {
			return nil, err
		}
		if !f.complete {
			return nil, fmt.Errorf("%s: %s; run the shard again (it resumes)", path, f.problem)
		}
		if m == nil {
			t := f.trailer
			m = &Merged{Schema: MergedSchema, Sweep: t.Sweep, Plan: t.Plan, Quick: t.Quick, Experiment: t.Experiment}
			planFile = path
		} else if f.trailer.Plan != m.Plan {
			return nil, fmt.Errorf("%s is of plan %s, %s of plan %s: results of different sweeps (or of a changed spec) in one merge",
				path, f.trailer.Plan, planFile, m.Plan)
		}
		for i := range f.records {
			r := &f.records[i]
			if total < 0 {
				total = r.Total
				points = make([]*MergedPoint, total)
			}
			if r.Plan != m.Plan || r.Total != total {
				return nil, fmt.Errorf("%s: point %s belongs to plan %s (%d points), %s to plan %s (%d points): results of different sweeps",
					path, r.ID, r.Plan, r.Total, planFile, m.Plan, total)
			}
			if r.Index < 0 || r.Index >= total {
				return nil, fmt.Errorf("%s: point %s: index %d out of range 0..%d", path, r.ID, r.Index, total-1)
			}
			if prev, ok := from[r.Index]; ok {
				return nil, fmt.Errorf("point #%d %s twice: in %s and in %s (shards of two different shardings in one merge?)", r.Index, r.ID, prev, path)
			}
			if _, ok := builds[r.Build]; !ok {
				if len(builds) > 0 && !opt.AllowMixedVersions {
					return nil, fmt.Errorf("%s: point %s was run by fabemu %s, the points of %s by %s: results of two builds; "+
						"rerun with one build, or merge with --allow-mixed-versions", path, r.ID, buildName(r.Build), builds[buildOrder[0]], buildName(buildOrder[0]))
				}
				builds[r.Build] = path
				buildOrder = append(buildOrder, r.Build)
			}
			from[r.Index] = path
			points[r.Index] = &MergedPoint{Index: r.Index, ID: r.ID, ConfigHash: r.ConfigHash, Seed: r.Seed, Result: r.Result, SHA256: r.SHA256}
		}
	}
	if total < 0 {
		return nil, fmt.Errorf("%s: the shard files hold no points", strings.Join(dirs, ", "))
	}
	var missing []string
	var ps []experiment.Point
	if e, err := experiment.FromJSON(m.Experiment, planFile); err == nil {
		ps, _ = e.Points(m.Quick)
	}
	for i, pt := range points {
		if pt == nil {
			name := fmt.Sprint("#", i)
			if len(ps) == total {
				name += " " + ps[i].ID
			}
			missing = append(missing, name)
			continue
		}
		m.Points = append(m.Points, *pt)
	}
	m.Build = strings.Join(buildOrder, ", ")
	if len(missing) > 0 {
		return nil, fmt.Errorf("%d of %d points missing: %s (their shards have not run, or their files are elsewhere)", len(missing), total, strings.Join(missing, ", "))
	}
	return m, nil
}

func buildName(b string) string {
	if b == "" {
		return "(a build that did not record its version)"
	}
	return b
}

// Encode writes the merged result as indented JSON with a final newline.
func (m *Merged) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ReadMerged reads a merged result file.
func ReadMerged(path string) (*Merged, error) {
	data, err := inputfile.ReadFile(path, inputfile.ResultLimit)
	if err != nil {
		return nil, err
	}
	var m Merged
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.Schema != MergedSchema {
		return nil, fmt.Errorf("%s: schema %q: want %s (a merged sweep result from fabemu sweep merge)", path, m.Schema, MergedSchema)
	}
	if len(m.Experiment) == 0 {
		return nil, fmt.Errorf("%s: no experiment definition", path)
	}
	for i, pt := range m.Points {
		if pt.Index != i {
			return nil, fmt.Errorf("%s: points[%d] has index %d: want the points in plan order", path, i, pt.Index)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, pt.Result); err != nil {
			return nil, fmt.Errorf("%s: point #%d %s: %w", path, i, pt.ID, err)
		}
		if sum(compact.Bytes()) != pt.SHA256 {
			return nil, fmt.Errorf("%s: point #%d %s: checksum mismatch", path, i, pt.ID)
		}
	}
	return &m, nil
}

// Result rebuilds the experiment's result (table, JSON, plots) from a
// merged sweep; name is used in messages.
func (m *Merged) Result(name string) (*experiment.Result, error) {
	e, err := experiment.FromJSON(m.Experiment, name)
	if err != nil {
		return nil, err
	}
	ps, err := e.Points(m.Quick)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(ps) != len(m.Points) {
		return nil, fmt.Errorf("%s: %d points, the experiment has %d", name, len(m.Points), len(ps))
	}
	results := make([]*experiment.PointResult, len(ps))
	for i, pt := range m.Points {
		if ps[i].ID != pt.ID || ps[i].ConfigHash != pt.ConfigHash {
			return nil, fmt.Errorf("%s: point #%d is %s (config %.12s), the experiment's is %s (config %.12s): the binary's configuration changed",
				name, i, pt.ID, pt.ConfigHash, ps[i].ID, ps[i].ConfigHash)
		}
		var pr experiment.PointResult
		if err := json.Unmarshal(pt.Result, &pr); err != nil {
			return nil, fmt.Errorf("%s: point #%d %s: %w", name, i, pt.ID, err)
		}
		results[i] = &pr
	}
	res, err := e.Assemble(m.Quick, results)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}
