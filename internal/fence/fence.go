// Package fence owns the module's layering rules: which packages may import
// which (docs/architecture.md, "Layout and who may import whom" in the
// design). The rules are a table, [Rules], checked by this package's test
// against the import graph `go list -deps -json` reports, so a forbidden
// import fails CI with the chain of imports that leads to it.
//
// Rules name packages by module-relative path patterns with the go
// command's "/..." meaning: "fabric/..." is fabric and everything below
// it. A rule either allows a set of imports (everything else is refused)
// or denies one.
package fence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Pseudo-patterns that stand for packages outside the module.
const (
	// Std is the standard library.
	Std = "std"
	// ThirdParty is every package outside the standard library and the
	// module.
	ThirdParty = "third-party"
)

// A Rule constrains the imports of the packages its Packages patterns
// match (less those Except matches).
//
// With Allow set, every direct import of such a package must match Allow
// (module-relative patterns, [Std] or [ThirdParty]), and every module
// package it reaches through any chain of imports must match one of
// Allow's module-relative patterns: a pure library cannot reach the NIC
// through a helper. Third-party packages reached through an allowed
// module package are that package's business.
//
// With Deny set, no module package reached through any chain of imports
// may match Deny.
type Rule struct {
	// Name says what the rule protects, in a few words.
	Name string
	// Packages are the module-relative patterns the rule applies to.
	Packages []string
	// Except are patterns taken out of Packages.
	Except []string
	// MustMatch makes an empty match an error: a rule about a package that
	// was renamed must be updated, not silently skipped. For rules with
	// several patterns (a package being moved), one match is enough.
	MustMatch bool
	// Allow lists what matched packages may import; nil means no
	// allow-list.
	Allow []string
	// Deny lists module packages that matched packages must not reach.
	Deny []string
}

// Above the fabric, from the bottom up: everything that may use the
// fabric but that the fabric must not know about.
var aboveFabric = []string{"nic/...", "emu/...", "model/...", "workload/...", "experiment/...", "live/...", "cmd/...", "tracefmt/...", "bpf/..."}

// Rules are the module's layering rules (the design's import picture:
// command -> experiment/daemon -> workloads -> model -> nic -> fabric;
// reorder, injection and traffic patterns are pure libraries).
var Rules = []Rule{
	{
		Name:      "the fabric knows nothing above it",
		Packages:  []string{"fabric/..."},
		MustMatch: true,
		Allow:     []string{"fabric/...", "internal/...", Std, ThirdParty},
	},
	{
		Name:      "reorder is a pure library (standard library and internal/ only)",
		Packages:  []string{"reorder/..."},
		MustMatch: true,
		Allow:     []string{"internal/...", Std},
	},
	{
		Name:      "injection is a pure library (standard library and internal/ only)",
		Packages:  []string{"injection/..."},
		MustMatch: true,
		Allow:     []string{"internal/...", Std},
	},
	{
		// The traffic patterns are moving from nic/traffic to
		// workload/traffic; either path satisfies MustMatch.
		Name:      "traffic patterns are a pure library (standard library and internal/ only)",
		Packages:  []string{"nic/traffic/...", "workload/traffic/..."},
		MustMatch: true,
		Allow:     []string{"internal/...", Std},
	},
	{
		Name:     "nothing outside cmd/ imports a command",
		Packages: []string{"..."},
		Except:   []string{"cmd/..."},
		Deny:     []string{"cmd/..."},
	},
	{
		Name:     "the NIC does not import the model, workloads or experiments above it",
		Packages: []string{"nic"},
		Deny:     []string{"model/...", "workload/...", "experiment/..."},
	},
	{
		// The daemon core sits above the workloads and the model it drives
		// (docs/architecture.md): nothing it runs may reach back up to it.
		Name:      "the daemon core is above the model, the NIC and the workloads",
		Packages:  []string{"fabric/...", "nic/...", "model/...", "workload/...", "tracefmt/...", "reorder/...", "injection/..."},
		MustMatch: true,
		Deny:      []string{"emu/...", "experiment/...", "sweep/..."},
	},
	{
		// internal/tools holds programs (plot generators) that drive the
		// model; they are commands in all but location.
		Name:     "internal/ helpers do not import the layers they serve",
		Packages: []string{"internal/..."},
		Except:   []string{"internal/tools/..."},
		Deny:     append([]string{"fabric/...", "reorder/...", "injection/..."}, aboveFabric...),
	},
}

// Package is one node of the import graph.
type Package struct {
	// Path is the import path.
	Path string
	// Standard reports a standard-library package.
	Standard bool
	// Imports are the direct imports (import paths).
	Imports []string
}

// Graph is an import graph: the module's packages and everything they
// depend on.
type Graph struct {
	// Module is the module path, e.g. github.com/fabemu/fabemu.
	Module   string
	Packages map[string]*Package
}

// rel returns path relative to the module ("" for the module root
// package) and whether it is in the module.
func (g *Graph) rel(path string) (string, bool) {
	if path == g.Module {
		return "", true
	}
	if r, ok := strings.CutPrefix(path, g.Module+"/"); ok {
		return r, true
	}
	return "", false
}

// class returns what kind of package path is: its module-relative path
// for a module package, else Std or ThirdParty.
func (g *Graph) class(path string) (rel string, inModule bool, kind string) {
	if r, ok := g.rel(path); ok {
		return r, true, ""
	}
	if p := g.Packages[path]; p != nil && p.Standard {
		return "", false, Std
	}
	return "", false, ThirdParty
}

// Match reports whether module-relative path rel matches pattern:
// "a/b" matches exactly, "a/b/..." matches a/b and everything below it,
// "..." matches everything.
func Match(pattern, rel string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}

func matchAny(patterns []string, rel string) bool {
	for _, p := range patterns {
		if p != Std && p != ThirdParty && Match(p, rel) {
			return true
		}
	}
	return false
}

// Violation is one broken rule.
type Violation struct {
	Rule string
	// Chain is the import chain from the constrained package to the
	// offending one, as import paths relative to the module where they
	// are in it.
	Chain []string
	// Why says what is wrong with the last package of the chain.
	Why string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s (%s)", v.Rule, strings.Join(v.Chain, " -> "), v.Why)
}

// Check applies rules to g and returns every violation (one per
// constrained package and offending import) and every rule whose
// MustMatch found no package. The result is sorted, so it is stable.
func Check(g *Graph, rules []Rule) (violations []Violation, unmatched []string) {
	var own []string // module packages, sorted
	for path := range g.Packages {
		if _, ok := g.rel(path); ok {
			own = append(own, path)
		}
	}
	slices.Sort(own)
	for _, r := range rules {
		matched := 0
		for _, path := range own {
			rel, _ := g.rel(path)
			if !matchAny(r.Packages, rel) || matchAny(r.Except, rel) {
				continue
			}
			matched++
			violations = append(violations, g.checkPackage(r, path)...)
		}
		if r.MustMatch && matched == 0 {
			unmatched = append(unmatched, fmt.Sprintf("%s: no package matches %s; update the rule if the package moved",
				r.Name, strings.Join(r.Packages, " or ")))
		}
	}
	return violations, unmatched
}

// checkPackage walks the imports of root breadth first, so each offending
// package is reported with a shortest chain.
func (g *Graph) checkPackage(r Rule, root string) []Violation {
	var out []Violation
	parent := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		p := g.Packages[path]
		if p == nil {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := parent[imp]; seen {
				continue
			}
			parent[imp] = path
			rel, inModule, kind := g.class(imp)
			why := ""
			switch {
			case inModule && r.Allow != nil && !matchAny(r.Allow, rel):
				why = fmt.Sprintf("%s is not in %s", g.name(imp), strings.Join(r.Allow, ", "))
			case inModule && matchAny(r.Deny, rel):
				why = fmt.Sprintf("%s is in %s", g.name(imp), strings.Join(r.Deny, ", "))
			case !inModule && path == root && r.Allow != nil && !slices.Contains(r.Allow, kind):
				why = fmt.Sprintf("%s is a %s package; allowed: %s", imp, kind, strings.Join(r.Allow, ", "))
			}
			if why != "" {
				out = append(out, Violation{Rule: r.Name, Chain: g.chain(parent, imp), Why: why})
				continue // one report per offender; do not walk past it
			}
			if inModule {
				queue = append(queue, imp)
			}
		}
	}
	return out
}

// name is path relative to the module where it is in it.
func (g *Graph) name(path string) string {
	if rel, ok := g.rel(path); ok {
		if rel == "" {
			return "(module root)"
		}
		return rel
	}
	return path
}

func (g *Graph) chain(parent map[string]string, last string) []string {
	var c []string
	for p := last; p != ""; p = parent[p] {
		c = append(c, g.name(p))
	}
	slices.Reverse(c)
	return c
}

// ErrNoGoTool is returned by [Load] when the go command is not on PATH.
var ErrNoGoTool = errors.New("fence: the go command is not on PATH")

// Load builds the import graph of the module holding dir (and every
// dependency) with `go list -deps -json ./...`, run in the module's root.
func Load(dir string) (*Graph, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, ErrNoGoTool
	}
	run := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("fence: go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	out, err := run(dir, "list", "-m", "-json")
	if err != nil {
		return nil, err
	}
	var mod struct{ Path, Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return nil, fmt.Errorf("fence: go list -m: %w", err)
	}
	out, err = run(mod.Dir, "list", "-deps", "-json", "./...")
	if err != nil {
		return nil, err
	}
	return decodeGraph(mod.Path, bytes.NewReader(out))
}

// decodeGraph reads the concatenated JSON objects of `go list -json`.
func decodeGraph(module string, r io.Reader) (*Graph, error) {
	g := &Graph{Module: module, Packages: map[string]*Package{}}
	dec := json.NewDecoder(r)
	for {
		var p struct {
			ImportPath string
			Standard   bool
			Imports    []string
			Error      *struct{ Err string }
		}
		err := dec.Decode(&p)
		if err == io.EOF {
			return g, nil
		}
		if err != nil {
			return nil, fmt.Errorf("fence: go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("fence: package %s: %s", p.ImportPath, p.Error.Err)
		}
		g.Packages[p.ImportPath] = &Package{Path: p.ImportPath, Standard: p.Standard, Imports: p.Imports}
	}
}
