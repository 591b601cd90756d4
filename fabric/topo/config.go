package topo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Config selects and sizes a topology. Its zero value is not valid: start
// from DefaultConfig(kind), which holds the papers' values, and override.
// Fields that do not apply to the chosen kind are ignored (but must not be
// negative).
type Config struct {
	// Kind is the topology family: torus, mesh, min, irregular or file.
	// Default torus (paper 004 §4.1 evaluates a 4x4 torus).
	Kind Kind `yaml:"kind" json:"kind" doc:"topology family: torus, mesh, min, irregular or file" paper:"004 §4.1"`

	// K is the number of switches along each dimension of a torus or mesh,
	// dimension 0 first (unit: switches). Default [4, 4] (paper 004 §4.1
	// 4x4 torus; papers 001 and 002 use 16x16 and 32x32).
	K []int `yaml:"k,omitempty" json:"k,omitempty" unit:"switches" doc:"switches along each dimension of a torus or mesh, dimension 0 first (papers 001, 002: 16x16, 32x32)" paper:"004 §4.1"`
	// N is the number of dimensions of a torus or mesh when K has a single
	// entry: K = [k], N = n builds a k-ary n-cube (unit: dimensions).
	// Default 0: N = len(K).
	N int `yaml:"n,omitempty" json:"n,omitempty" unit:"dimensions" doc:"dimensions of a torus or mesh when k has one entry (k = [k], n builds a k-ary n-cube); 0 = len(k)"`
	// HostsPerSwitch is the number of hosts on every switch of a torus, mesh
	// or irregular network (unit: hosts). Default 8 for torus and mesh
	// (paper 004 §4.1: 8 workstations per switch of the 4x4 torus), 4 for
	// irregular (paper 004 §4.1: 4 nodes per switch).
	HostsPerSwitch int `yaml:"hosts_per_switch" json:"hosts_per_switch" unit:"hosts" doc:"hosts on every switch of a torus, mesh or irregular network (paper: 8 on the 4x4 torus, 4 on irregular networks)" paper:"004 §4.1"`
	// Ports is the number of ports per switch of a torus, mesh or irregular
	// network (unit: ports). Cubes need at least HostsPerSwitch + 2*N; 0
	// (the default for cubes) means exactly that. Default 8 for irregular
	// (paper 004 §4.1: 8-port switches).
	Ports int `yaml:"ports" json:"ports" unit:"ports" doc:"ports per switch of a torus, mesh or irregular network; cubes need hosts_per_switch + 2n (0 = exactly that)" paper:"004 §4.1"`

	// Hosts is the number of hosts of a MIN (unit: hosts). Default 64
	// (paper 000 §4.1: 64, 256 and 512 hosts; paper 003 §4.2: 256).
	Hosts int `yaml:"hosts" json:"hosts" unit:"hosts" doc:"hosts of a MIN (paper 000: 64, 256, 512; paper 003: 256)" paper:"000 §4.1"`
	// MINRadix is the number of ports of every MIN switch, half down and
	// half up (unit: ports). Default 8 (paper 000 §4.1: 8-port switches;
	// paper 003 §4.2 also uses 32x32 switches, min_radix 32).
	MINRadix int `yaml:"min_radix" json:"min_radix" unit:"ports" doc:"ports of every MIN switch, half down and half up (paper 003 also uses 32)" paper:"000 §4.1"`
	// Stages is the number of switch stages of a MIN (unit: stages).
	// Default 0: the minimum, ceil(log_{min_radix/2} hosts), which gives
	// the papers' 3, 4 and 5 stages for 64, 256 and 512 hosts (paper 000
	// §4.1) and 4 or 2 stages for 256 hosts of 8x8 or 32x32 switches
	// (paper 003 §4.2).
	Stages int `yaml:"stages" json:"stages" unit:"stages" doc:"switch stages of a MIN; 0 = the minimum, ceil(log_{min_radix/2} hosts)" paper:"000 §4.1"`

	// Switches is the number of switches of an irregular network (unit:
	// switches). Default 32 (paper 004 §4.1, Tables 1 and 2; the paper
	// also generates 16- and 64-switch networks).
	Switches int `yaml:"switches" json:"switches" unit:"switches" doc:"switches of an irregular network (paper: 16, 32 and 64)" paper:"004 §4.1"`
	// Seed selects the random irregular network; the same seed gives the
	// same network everywhere (unit: none). Default 1. Paper 004 §4.1
	// evaluates ten random topologies per size: seeds 1..10.
	Seed uint64 `yaml:"seed" json:"seed" doc:"selects the random irregular network; the same seed gives the same network everywhere (paper: ten random topologies per size)" paper:"004 §4.1"`

	// Path is the topology file for kind file (unit: path).
	Path string `yaml:"path,omitempty" json:"path,omitempty" doc:"topology file for kind file (YAML/JSON edge list or ibnetdiscover output)"`
	// Format of Path: yaml, json or ibnetdiscover. Default "": by
	// extension (.yaml/.yml, .json), anything else is read as
	// ibnetdiscover output.
	Format string `yaml:"format,omitempty" json:"format,omitempty" doc:"format of path: yaml, json or ibnetdiscover; empty = by extension (.yaml/.yml, .json, else ibnetdiscover)"`
}

// KindFile is the Config kind that loads a topology from Config.Path.
const KindFile Kind = "file"

// File formats accepted by LoadFile and Config.Format.
const (
	FormatYAML          = "yaml"
	FormatJSON          = "json"
	FormatIBNetDiscover = "ibnetdiscover"
)

// DefaultConfig returns the defaults for kind (the papers' setups; see the
// field comments). An unknown kind gets the torus defaults with that kind,
// which Validate then refuses.
func DefaultConfig(kind Kind) Config {
	c := Config{Kind: kind, Seed: 1}
	switch kind {
	case KindMIN:
		c.Hosts, c.MINRadix = 64, 8
	case KindIrregular:
		c.Switches, c.Ports, c.HostsPerSwitch = 32, 8, 4
	case KindFile:
	default:
		c.K, c.HostsPerSwitch = []int{4, 4}, 8
	}
	return c
}

// FieldError is a Config validation error about one field, named by its
// yaml key ("k[1]", "hosts_per_switch").
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return fmt.Sprintf("topology: %s: %s", e.Field, e.Msg) }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// MaxSwitchPorts bounds the ports of a switch (and so the hosts on one);
// MaxDimensions the dimensions of a torus or mesh (2^32 switches already
// exceed the switch limit).
const (
	MaxSwitchPorts = 4096
	MaxDimensions  = 32
)

// Dims returns the cube shape K expanded with N (K = [k], N = n gives n
// entries of k).
func (c *Config) Dims() []int {
	if len(c.K) == 1 && c.N > 1 {
		k := make([]int, c.N)
		for i := range k {
			k[i] = c.K[0]
		}
		return k
	}
	return c.K
}

// Validate checks the config and returns a *FieldError naming the first
// bad field.
func (c *Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"n", c.N}, {"hosts_per_switch", c.HostsPerSwitch}, {"ports", c.Ports}, {"hosts", c.Hosts},
		{"min_radix", c.MINRadix}, {"stages", c.Stages}, {"switches", c.Switches}} {
		if f.v < 0 {
			return fieldErr(f.name, "%d is negative", f.v)
		}
	}
	// Upper bounds, so that no count overflows when it is multiplied out
	// (ports x switches, hosts x stages) before the memory estimate.
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{{"n", c.N, MaxDimensions}, {"hosts_per_switch", c.HostsPerSwitch, MaxSwitchPorts}, {"ports", c.Ports, MaxSwitchPorts},
		{"min_radix", c.MINRadix, MaxSwitchPorts}, {"hosts", c.Hosts, maxSwitches}, {"stages", c.Stages, maxSwitches}} {
		if f.v > f.max {
			return fieldErr(f.name, "%d: at most %d", f.v, f.max)
		}
	}
	switch c.Kind {
	case KindTorus, KindMesh:
		if len(c.K) == 0 {
			return fieldErr("k", "empty: give the switches per dimension, e.g. [4, 4]")
		}
		for i, k := range c.K {
			if k <= 0 {
				return fieldErr(fmt.Sprintf("k[%d]", i), "%d: switches per dimension must be at least 1", k)
			}
		}
		if c.N != 0 && len(c.K) > 1 && c.N != len(c.K) {
			return fieldErr("n", "%d does not match k, which has %d dimensions", c.N, len(c.K))
		}
		dims := c.Dims()
		total := 1
		for _, k := range dims {
			if total > maxSwitches/k {
				return fieldErr("k", "%s: more than %d switches", CubeShape(dims), maxSwitches)
			}
			total *= k
		}
		if c.HostsPerSwitch <= 0 {
			return fieldErr("hosts_per_switch", "%d: must be at least 1", c.HostsPerSwitch)
		}
		if need := CubePortsNeeded(len(dims), c.HostsPerSwitch); c.Ports != 0 && c.Ports < need {
			return fieldErr("ports", "%d is fewer than %d hosts + %d neighbour ports (2 per dimension) = %d",
				c.Ports, c.HostsPerSwitch, 2*len(dims), need)
		}
	case KindMIN:
		if c.Hosts <= 0 {
			return fieldErr("hosts", "%d: must be at least 1", c.Hosts)
		}
		if c.MINRadix <= 0 {
			return fieldErr("min_radix", "%d: must be a positive even number of ports", c.MINRadix)
		}
		need, err := MINStagesNeeded(c.Hosts, c.MINRadix)
		if err != nil {
			field := "hosts"
			if c.MINRadix%2 != 0 || c.MINRadix == 2 {
				field = "min_radix"
			}
			return fieldErr(field, "%s", strings.TrimPrefix(err.Error(), "min: "))
		}
		if c.Stages != 0 && c.Stages < need {
			return fieldErr("stages", "%d: %d hosts on %d-port switches need at least %d stages", c.Stages, c.Hosts, c.MINRadix, need)
		}
		if st := max(c.Stages, need); st > maxSwitches/(c.Hosts/(c.MINRadix/2)) {
			return fieldErr("stages", "%d stages of %d switches: more than %d switches", st, c.Hosts/(c.MINRadix/2), maxSwitches)
		}
	case KindIrregular:
		switch {
		case c.Switches <= 0:
			return fieldErr("switches", "%d: must be at least 1", c.Switches)
		case c.Switches > MaxIrregularSwitches:
			return fieldErr("switches", "%d: more than %d", c.Switches, MaxIrregularSwitches)
		case c.HostsPerSwitch <= 0:
			return fieldErr("hosts_per_switch", "%d: must be at least 1", c.HostsPerSwitch)
		case c.Ports <= 0:
			return fieldErr("ports", "%d: must be at least 1", c.Ports)
		case c.Switches > 2 && c.Ports < c.HostsPerSwitch+2:
			return fieldErr("ports", "%d is fewer than %d hosts + 2 neighbour ports: %d switches cannot form a connected network",
				c.Ports, c.HostsPerSwitch, c.Switches)
		case c.Switches == 2 && c.Ports < c.HostsPerSwitch+1:
			return fieldErr("ports", "%d is fewer than %d hosts + 1 neighbour port", c.Ports, c.HostsPerSwitch)
		}
	case KindFile:
		if c.Path == "" {
			return fieldErr("path", "empty: kind file needs the topology file's path")
		}
		if _, err := c.format(); err != nil {
			return err
		}
	default:
		return fieldErr("kind", "%q unknown (expected torus, mesh, min, irregular or file)", c.Kind)
	}
	if c.Kind != KindFile {
		// Only kind file reads them: given for another kind they would be
		// accepted and never read.
		if c.Path != "" {
			return fieldErr("path", "%q: only kind file reads a topology file, and kind is %s: drop the path or set kind file", c.Path, c.Kind)
		}
		if c.Format != "" {
			return fieldErr("format", "%q: only kind file reads a topology file, and kind is %s", c.Format, c.Kind)
		}
	}
	return nil
}

func (c *Config) format() (string, error) {
	switch c.Format {
	case FormatYAML, FormatJSON, FormatIBNetDiscover:
		return c.Format, nil
	case "":
		return formatOf(c.Path), nil
	}
	return "", fieldErr("format", "%q unknown (expected yaml, json or ibnetdiscover)", c.Format)
}

func formatOf(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return FormatYAML
	case ".json":
		return FormatJSON
	}
	return FormatIBNetDiscover
}

// Build validates cfg and builds the topology it describes.
func Build(cfg Config) (*Topology, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch cfg.Kind {
	case KindTorus:
		return Torus(cfg.Dims(), cfg.HostsPerSwitch, cfg.Ports)
	case KindMesh:
		return Mesh(cfg.Dims(), cfg.HostsPerSwitch, cfg.Ports)
	case KindMIN:
		return MIN(cfg.Hosts, cfg.MINRadix, cfg.Stages)
	case KindIrregular:
		return Irregular(cfg.Switches, cfg.Ports, cfg.HostsPerSwitch, cfg.Seed)
	default: // KindFile; Validate refused the rest
		f, _ := cfg.format()
		return LoadFile(cfg.Path, f)
	}
}

// LoadFile reads a topology file in the given format (yaml, json,
// ibnetdiscover, or "" to choose by extension as Config.Format does).
func LoadFile(path, format string) (*Topology, error) {
	if format == "" {
		format = formatOf(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	switch format {
	case FormatYAML:
		return LoadYAML(path, f)
	case FormatJSON:
		return LoadJSON(path, f)
	case FormatIBNetDiscover:
		return LoadIBNetDiscover(path, f)
	}
	return nil, fmt.Errorf("topology file %s: format %q unknown (expected yaml, json or ibnetdiscover)", path, format)
}

// configKeys are the keys of a Config document.
var configKeys = map[string][]string{
	"": {"kind", "k", "n", "hosts_per_switch", "ports", "hosts", "min_radix", "stages", "switches", "seed", "path", "format"},
}

// DecodeConfig reads a topology Config document (YAML, or JSON when format
// is "json") strictly: it starts from DefaultConfig of the document's kind
// (torus if absent), rejects unknown keys, and validates the result. Every
// error names the file (name) and, where it can, the line.
func DecodeConfig(name string, r io.Reader, format string) (Config, error) {
	data, err := readAll(name, r)
	if err != nil {
		return Config{}, err
	}
	lines := map[string]int{}
	var peek struct {
		Kind Kind `yaml:"kind" json:"kind"`
	}
	var cfg Config
	switch format {
	case FormatJSON:
		if err := walkJSON(name, data, configKeys, lines); err != nil {
			return Config{}, err
		}
		_ = json.Unmarshal(data, &peek) // errors are reported by the strict pass
		cfg = DefaultConfig(kindOr(peek.Kind))
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return Config{}, jsonErr(name, data, err)
		}
	case FormatYAML, "":
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			return Config{}, yamlErr(name, err)
		}
		if len(root.Content) > 0 {
			if err := walkYAML(name, root.Content[0], "", "", configKeys, lines); err != nil {
				return Config{}, err
			}
		}
		_ = yaml.Unmarshal(data, &peek)
		cfg = DefaultConfig(kindOr(peek.Kind))
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && err != io.EOF {
			return Config{}, yamlErr(name, err)
		}
	default:
		return Config{}, fmt.Errorf("%s: config format %q unknown (expected yaml or json)", name, format)
	}
	if err := cfg.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			line := lines[fe.Field]
			if line == 0 {
				line = lines[strings.SplitN(fe.Field, "[", 2)[0]]
			}
			return Config{}, fileErr(name, line, "%s: %s", fe.Field, fe.Msg)
		}
		return Config{}, fileErr(name, 0, "%v", err)
	}
	return cfg, nil
}

func kindOr(k Kind) Kind {
	if k == "" {
		return KindTorus
	}
	return k
}

// Param describes one Config field for `fabemu config explain`.
type Param struct {
	Name    string // yaml key
	Unit    string
	Default string
	Source  string // paper and section the default comes from
	Doc     string
}

// Params lists the Config fields with their units, defaults and sources.
func Params() []Param {
	return []Param{
		{"kind", "", "torus", "paper 004 §4.1", "topology family: torus, mesh, min, irregular or file"},
		{"k", "switches", "[4, 4]", "paper 004 §4.1 (4x4 torus); papers 001, 002 (16x16, 32x32)", "switches along each dimension of a torus or mesh, dimension 0 first"},
		{"n", "dimensions", "len(k)", "papers 001, 002 (k-ary n-cubes)", "dimensions when k has one entry"},
		{"hosts_per_switch", "hosts", "8 (torus, mesh), 4 (irregular)", "paper 004 §4.1", "hosts attached to every switch"},
		{"ports", "ports", "hosts_per_switch+2n (cubes), 8 (irregular)", "paper 004 §4.1", "ports per switch"},
		{"hosts", "hosts", "64", "paper 000 §4.1 (64, 256, 512); paper 003 §4.2 (256)", "hosts of a MIN"},
		{"min_radix", "ports", "8", "paper 000 §4.1 (8-port); paper 003 §4.2 (8x8, 32x32)", "ports per MIN switch, half down, half up"},
		{"stages", "stages", "ceil(log_{min_radix/2} hosts)", "paper 000 §4.1; paper 003 §4.2", "switch stages of a MIN"},
		{"switches", "switches", "32", "paper 004 §4.1 (16, 32, 64)", "switches of an irregular network"},
		{"seed", "", "1", "paper 004 §4.1 (ten random topologies per size)", "selects the random irregular network"},
		{"path", "path", "", "", "topology file for kind file"},
		{"format", "", "by extension", "", "format of path: yaml, json or ibnetdiscover"},
	}
}
