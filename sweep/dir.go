package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// DirSchema names a results directory's description file.
const DirSchema = "fabemu.sweep.dir/v1"

// DirFile is the description file of a results directory.
const DirFile = "sweep.json"

// DirInfo is what a results directory holds, written by the first run
// into it: the plan and the shard count. A run of another plan or
// another shard count is refused there (its files would not merge).
type DirInfo struct {
	Schema string `json:"schema"`
	Sweep  string `json:"sweep"`
	Plan   string `json:"plan"`
	Points int    `json:"points"`
	Shards int    `json:"shards"`
}

// ReadDirInfo reads dir's description; it returns nil, nil when the
// directory has none (nothing has run there yet, or an older fabemu ran).
func ReadDirInfo(dir string) (*DirInfo, error) {
	path := filepath.Join(dir, DirFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d DirInfo
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if d.Schema != DirSchema || d.Plan == "" || d.Shards < 1 || d.Points < 1 {
		return nil, fmt.Errorf("%s: want schema %s with a plan, points >= 1 and shards >= 1", path, DirSchema)
	}
	return &d, nil
}

var shardName = regexp.MustCompile(`^shard-(\d{4,})-of-(\d{4,})\.jsonl$`)

// parseShardName returns the shard and count a result file's name states.
func parseShardName(path string) (int, int, bool) {
	m := shardName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(m[1])
	n, err2 := strconv.Atoi(m[2])
	return i, n, err1 == nil && err2 == nil
}

// ClaimDir records the plan and shard count in dir (creating it), or
// refuses another plan or shard count there; from says where the count
// came from. A launcher calls it before submitting, so that status knows
// the shards before any has run.
func ClaimDir(p *Plan, dir string, shards int, from string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return claimDir(p, dir, shards, from)
}

// claimDir records the plan and shard count in dir, or checks them
// against what it records; from says where the shard count came from.
// A directory without a description but with result files is checked
// against those files' names and plans.
func claimDir(p *Plan, dir string, shards int, from string) error {
	want := DirInfo{Schema: DirSchema, Sweep: p.Name, Plan: p.Hash, Points: len(p.Points), Shards: shards}
	refuse := func(d DirInfo, what string) error {
		return fmt.Errorf("%s holds sweep %q plan %s in %d shards (%s); this run is sweep %q plan %s in %d shards (%s): "+
			"run a shard of that sweep (--shard I/%d, or FABEMU_SHARDS=%d in a resubmitted array task) or use another directory",
			dir, d.Sweep, d.Plan, d.Shards, what, p.Name, p.Hash, shards, from, d.Shards, d.Shards)
	}
	for {
		d, err := ReadDirInfo(dir)
		if err != nil {
			return err
		}
		if d != nil {
			if d.Plan != want.Plan || d.Shards != want.Shards {
				return refuse(*d, filepath.Join(dir, DirFile))
			}
			return nil
		}
		// no description: an older directory, or the first run
		files, err := ResultFiles(dir)
		if err != nil {
			return err
		}
		for _, f := range files {
			_, n, ok := parseShardName(f)
			if ok && n != shards {
				return refuse(DirInfo{Sweep: "?", Plan: "?", Shards: n}, "result file "+filepath.Base(f))
			}
			sf, err := readShardFile(f)
			if err == nil && len(sf.records) > 0 && sf.records[0].Plan != p.Hash {
				r := sf.records[0]
				return refuse(DirInfo{Sweep: r.Sweep, Plan: r.Plan, Shards: n}, "result file "+filepath.Base(f))
			}
		}
		b, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			return err
		}
		tmp, err := os.CreateTemp(dir, ".sweep.json.*")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(append(b, '\n'))
		cerr := tmp.Close()
		if werr != nil || cerr != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("%s: %v", tmp.Name(), errors.Join(werr, cerr))
		}
		// link fails if another shard created it first: then check
		// against that one
		err = os.Link(tmp.Name(), filepath.Join(dir, DirFile))
		os.Remove(tmp.Name())
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrExist) {
			return err
		}
	}
}
