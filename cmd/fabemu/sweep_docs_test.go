package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/sweep"
)

// TestSweepDocs: every sweep spec in docs/sweeps.md plans, every
// "fabemu sweep plan" command in it runs as written (from the
// repository's root), and every deploy/ file it names exists.
func TestSweepDocs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "sweeps.md"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	blocks := regexp.MustCompile("(?s)```(\\w*)\\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	specs, plans := 0, 0
	for _, b := range blocks {
		lang, body := b[1], b[2]
		switch lang {
		case "yaml":
			s, err := sweep.ParseSpec([]byte(body), "docs/sweeps.md yaml block")
			if err != nil {
				t.Errorf("%v\n%s", err, body)
				continue
			}
			if _, err := sweep.NewPlan(s, ""); err != nil {
				t.Errorf("docs/sweeps.md: spec does not plan: %v\n%s", err, body)
			}
			specs++
		case "sh", "":
			for _, line := range strings.Split(body, "\n") {
				line, _, _ = strings.Cut(line, "#")
				f := strings.Fields(line)
				if len(f) >= 4 && f[0] == "fabemu" && f[1] == "sweep" && f[2] == "plan" && !strings.Contains(f[3], "SPEC") {
					if _, err := runTrace(t, f[1:]...); err != nil {
						t.Errorf("docs/sweeps.md: %s: %v", strings.Join(f, " "), err)
					}
					plans++
				}
			}
		}
	}
	if specs < 2 || plans < 1 {
		t.Fatalf("found %d specs and %d plan commands in docs/sweeps.md: the extraction is broken", specs, plans)
	}
	for _, m := range regexp.MustCompile(`deploy/[\w./-]+\.(?:yaml|sbatch)|deploy/Dockerfile`).FindAllString(string(doc), -1) {
		if _, err := os.Stat(filepath.Join(root, m)); err != nil {
			t.Errorf("docs/sweeps.md names %s, which does not exist", m)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "sweep/launch/kubernetes.yaml.tmpl")); err != nil || !strings.Contains(string(doc), "sweep/launch/kubernetes.yaml.tmpl") {
		t.Errorf("the template docs/sweeps.md names: %v", err)
	}
}

// TestSweepHelpExamples: the spec files the sweep commands' examples
// name exist.
func TestSweepHelpExamples(t *testing.T) {
	cmd := newSweepCmd()
	re := regexp.MustCompile(`deploy/[\w./-]+\.yaml`)
	for _, c := range cmd.Commands() {
		for _, m := range re.FindAllString(c.Example+c.Long, -1) {
			if _, err := os.Stat(filepath.Join("../..", m)); err != nil {
				t.Errorf("sweep %s --help names %s: %v", c.Name(), m, err)
			}
		}
	}
}
