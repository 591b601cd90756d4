package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// update rewrites the golden files from the current code:
//
//	go test ./cmd/fabemu -run TestGolden -update
//
// A change that alters a golden file is its own commit that says why.
var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the current outputs")

// goldenRuns are the regression net of the model: one short run per preset
// family, both switch architectures, every delivery mode, a trace replay of
// the embedded sample and one experiment. Their JSON summaries, without
// the wall-clock "run" objects, must stay byte-identical through any
// refactoring; only a change of behaviour may change them.
var goldenRuns = []struct {
	name string
	args []string
}{
	// torus, CIOQ, deterministic (dimension order with datelines)
	{"sim-torus8x8-dor", []string{"sim", "--preset", "torus8x8-dor", "--load", "0.5", "--duration", "40us", "--warmup", "10us"}},
	// torus, input-queued, adaptive with a dimension-order escape
	{"sim-torus8x8-iq-adaptive", []string{"sim", "--preset", "torus8x8-dor", "--routing", "adaptive", "--load", "0.6", "--set", "fabric.switch=iq", "--set", "fabric.output_buffer=0", "--duration", "40us", "--warmup", "10us"}},
	// irregular, adaptive-ooo under bit-reversal
	{"sim-irregular16-ooo-bitrev", []string{"sim", "--preset", "paper004-irregular16", "--delivery", "adaptive-ooo", "--pattern", "bitrev", "--load", "0.3", "--duration", "40us", "--warmup", "10us"}},
	// irregular, adaptive-inorder with static buffers and ADAP-LI past saturation
	{"sim-irregular32-inorder-li", []string{"sim", "--preset", "paper004-irregular32", "--delivery", "adaptive-inorder", "--reorder", "static:2KiB", "--injection", "li", "--load", "0.5", "--duration", "40us", "--warmup", "10us"}},
	// torus with many hosts per switch, adaptive-inorder with ADAP-LW
	{"sim-torus4x4-inorder-lw", []string{"sim", "--preset", "paper004-torus4x4", "--delivery", "adaptive-inorder", "--reorder", "static:4KiB", "--injection", "lw", "--load", "0.4", "--duration", "30us", "--warmup", "5us"}},
	// MIN with paper 000's switch (CIOQ, speedup 1.5), hot spot
	{"sim-min64-hotspot", []string{"sim", "--preset", "paper000-min64", "--pattern", "hotspot", "--load", "0.6", "--duration", "30us", "--warmup", "5us"}},
	// MIN of input-queued switches (paper 003), corner case 2
	{"sim-min256-8x8-iq-corner2", []string{"sim", "--preset", "paper003-min256-8x8", "--pattern", "corner2", "--load", "0.8", "--duration", "20us", "--warmup", "5us"}},
	// MIN with the RECN switch (paper 000 §3), corner case 2 scaled to 80-97 us
	{"sim-min64-recn-corner2", []string{"sim", "--preset", "paper000-min64", "--set", "fabric.switch=recn", "--pattern", "corner2:0.1", "--duration", "40us", "--warmup", "70us"}},
	// RECN with the paper's crossbar preference for normal queues over SAQs (paper 000 §4.1)
	{"sim-min64-recn-normalfirst-corner2", []string{"sim", "--preset", "paper000-min64", "--set", "fabric.switch=recn", "--set", "fabric.recn.normal_first=true", "--pattern", "corner2:0.1", "--duration", "40us", "--warmup", "70us"}},
	// 3-D torus, adaptive, exponential arrivals
	{"sim-8ary3cube-adaptive", []string{"sim", "--preset", "paper001-8ary3cube-vct", "--load", "0.4", "--duration", "10us", "--warmup", "2us"}},
	// 2-D torus with two adaptive lanes and small escape buffers
	{"sim-torus16x16-adaptive", []string{"sim", "--preset", "paper002-torus16x16-dateline", "--load", "0.7", "--duration", "15us", "--warmup", "5us"}},
	// the live-traffic fabric (mesh, 10 Gb/s, 4 KB MTU), size mix
	{"sim-tap-square-mix", []string{"sim", "--preset", "tap-square-10g", "--routing", "adaptive", "--sizes", "64:0.5,4096:0.5", "--load", "0.7", "--duration", "40us", "--warmup", "10us"}},
	// input-queued switches with a 2-iteration iSLIP allocator, adaptive, hot spot
	{"sim-min64-iq-islip2-adaptive", []string{"sim", "--preset", "paper000-min64", "--routing", "adaptive", "--pattern", "hotspot", "--set", "fabric.switch=iq", "--set", "fabric.allocator=islip(2)", "--load", "0.6", "--duration", "30us", "--warmup", "5us"}},
	// VOQ at the switch level with 2-iteration parallel iterative matching (random grants from run.seed), uniform
	{"sim-min64-voqsw-pim2-uniform", []string{"sim", "--preset", "paper000-min64", "--set", "fabric.switch=voqsw", "--set", "fabric.allocator=pim(2)", "--load", "0.9", "--duration", "30us", "--warmup", "5us"}},
	// Trans-t injection control (paper 001 §3) past saturation on an adaptive torus
	{"sim-torus8x8-transt", []string{"sim", "--preset", "torus8x8-dor", "--routing", "adaptive", "--injection", "trans-t", "--load", "1.0", "--duration", "40us", "--warmup", "20us"}},
	// bubble flow control (paper 002 §3): one lane, no dateline, past saturation; and the
	// adaptive bubble router with restrictive injection 4-All (paper 002 §5.1)
	{"sim-torus8x8-bubble-1lane", []string{"sim", "--preset", "torus8x8-dor", "--set", "routing.escape=bubble", "--load", "1.0", "--duration", "40us", "--warmup", "20us"}},
	{"sim-torus16x16-bubble-4all", []string{"sim", "--preset", "paper002-torus16x16-bubble", "--injection", "bubble:4-all", "--load", "1.0", "--duration", "15us", "--warmup", "5us"}},
	// the adaptive bubble router of paper 002 in phits: same-ring
	// selection, random arbitration (seeded), past saturation
	{"sim-torus16x16-abr", []string{"sim", "--preset", "paper002-torus16x16", "--load", "1.0", "--duration", "15us", "--warmup", "5us"}},
	// MIN with paper 000's queue schemes (1q, 4q, voqsw, voqnet), corner case 2 scaled to 8-9.7 us
	{"sim-min64-1q-corner2", []string{"sim", "--preset", "paper000-min64", "--pattern", "corner2:0.01,sources=stride", "--set", "fabric.switch=1q", "--duration", "15us", "--warmup", "2us"}},
	{"sim-min64-4q-corner2", []string{"sim", "--preset", "paper000-min64", "--pattern", "corner2:0.01,sources=stride", "--set", "fabric.switch=4q", "--duration", "15us", "--warmup", "2us"}},
	{"sim-min64-voqsw-corner2", []string{"sim", "--preset", "paper000-min64", "--pattern", "corner2:0.01,sources=stride", "--set", "fabric.switch=voqsw", "--duration", "15us", "--warmup", "2us"}},
	{"sim-min64-voqnet-corner2", []string{"sim", "--preset", "paper000-min64", "--pattern", "corner2:0.01,sources=stride", "--set", "fabric.switch=voqnet", "--duration", "15us", "--warmup", "2us"}},
	// VOQnet past saturation with 128 queues per input (64 destinations x 2 lanes): the
	// allocators' walk of an input's non-empty queues over several words, rr, hrr and islip(2)
	{"sim-torus8x8-voqnet-sat", []string{"sim", "--preset", "torus8x8-dor", "--set", "fabric.switch=voqnet", "--load", "1.0", "--duration", "20us", "--warmup", "10us"}},
	{"sim-torus8x8-voqnet-hrr", []string{"sim", "--preset", "torus8x8-dor", "--set", "fabric.switch=voqnet", "--set", "fabric.allocator=hrr", "--load", "1.0", "--duration", "20us", "--warmup", "10us"}},
	{"sim-torus8x8-voqnet-islip2", []string{"sim", "--preset", "torus8x8-dor", "--set", "fabric.switch=voqnet", "--set", "fabric.allocator=islip(2)", "--load", "1.0", "--duration", "20us", "--warmup", "10us"}},
	// VOQsw under adaptive routing (the output is chosen at arrival)
	{"sim-irregular16-voqsw-adaptive", []string{"sim", "--preset", "paper004-irregular16", "--routing", "adaptive", "--set", "fabric.switch=voqsw", "--load", "0.4", "--duration", "30us", "--warmup", "5us"}},
	// paper 003 chapter 2: one 24-port switch with PCIQ (2 and 4 sub-crossbars) and the
	// hierarchical round-robin arbiter, saturated uniform traffic; the hierarchical
	// crossbar and CIOQ with two queues on a 16-host MIN with a hot spot
	{"sim-star24-pciq2-hrr", []string{"sim", "--preset", "paper003-min256-8x8", "--set", "topology.kind=irregular", "--set", "topology.switches=1", "--set", "topology.hosts_per_switch=24", "--set", "topology.ports=24", "--set", "fabric.switch=pciq-2", "--set", "fabric.allocator=hrr", "--sizes", "256", "--load", "1.0", "--duration", "10us", "--warmup", "2us"}},
	{"sim-star24-pciq4-islip", []string{"sim", "--preset", "paper003-min256-8x8", "--set", "topology.kind=irregular", "--set", "topology.switches=1", "--set", "topology.hosts_per_switch=24", "--set", "topology.ports=24", "--set", "fabric.switch=pciq-4", "--set", "fabric.allocator=islip(2)", "--sizes", "256", "--load", "1.0", "--duration", "10us", "--warmup", "2us"}},
	{"sim-min16-hc-hotspot", []string{"sim", "--preset", "paper003-min256-8x8", "--set", "topology.hosts=16", "--set", "fabric.switch=hc", "--set", "fabric.output_buffer=4KiB", "--set", "fabric.allocator=hrr", "--pattern", "hotspot:0.1@6", "--sizes", "256", "--load", "1.0", "--duration", "15us", "--warmup", "2us"}},
	{"sim-min16-cioq2q-hotspot", []string{"sim", "--preset", "paper003-min256-8x8", "--set", "topology.hosts=16", "--set", "fabric.switch=cioq-2q", "--set", "fabric.output_buffer=4KiB", "--pattern", "hotspot:0.1@6", "--sizes", "256", "--load", "1.0", "--duration", "15us", "--warmup", "2us"}},
	// MIN of RECN-IQ switches (paper 003 ch. 3, the thesis' 4 KB inputs and thresholds), hot spot
	{"sim-min64-recniq-hotspot", []string{"sim", "--preset", "paper003-min256-8x8", "--set", "topology.hosts=64", "--set", "fabric.switch=recn-iq", "--pattern", "hotspot", "--load", "0.8", "--duration", "20us", "--warmup", "5us"}},
	// PCIQ-2 enhanced with RECN-IQ (paper 003 §2.8-2.9): one 24-port switch under the odd-even
	// worst case (§2.9.1), and a 16-host MIN with a hot spot (Xoff/Xon between switches)
	{"sim-star24-pciq2recniq-oddeven", []string{"sim", "--preset", "paper003-min256-8x8", "--set", "topology.kind=irregular", "--set", "topology.switches=1", "--set", "topology.hosts_per_switch=24", "--set", "topology.ports=24", "--set", "fabric.switch=pciq-2+recn-iq", "--set", "fabric.recn_iq.max_saqs=2", "--set", "fabric.allocator=hrr", "--pattern", "oddeven", "--sizes", "256", "--load", "1.0", "--duration", "10us", "--warmup", "2us"}},
	{"sim-min16-pciq2recniq-hotspot", []string{"sim", "--preset", "paper003-min256-8x8", "--set", "topology.hosts=16", "--set", "fabric.switch=pciq-2+recn-iq", "--set", "fabric.allocator=hrr", "--pattern", "hotspot:0.1@6", "--sizes", "256", "--load", "1.0", "--duration", "15us", "--warmup", "2us"}},
	// four injection queues per NIC on physical links, longest-path-first selection (paper 002 §2), past saturation
	{"sim-torus16x16-4q-physical-lpath", []string{"sim", "--preset", "paper002-torus16x16-dateline", "--load", "1.0", "--set", "nic.injection_queues.count=4", "--set", "nic.injection_queues.mode=physical", "--set", "nic.injection_queues.select=lpath", "--duration", "15us", "--warmup", "5us"}},
	// trace replay of the embedded sample, deterministic and adaptive-inorder
	{"replay-sample-det", []string{"replay", "--limit", "2000", "--compression", "20"}},
	{"replay-sample-inorder", []string{"replay", "--limit", "2000", "--compression", "20", "--delivery", "adaptive-inorder", "--reorder", "dynamic:256KiB,cap=128KiB", "--injection", "li"}},
	// replay of a small packet capture (TestCaptureFixture builds it), adaptive-ooo
	{"replay-capture-ooo", []string{"replay", "--trace", filepath.Join("testdata", "capture-small.pcap"), "--compression", "1", "--delivery", "adaptive-ooo"}},
	// one experiment: a paper004-table2 row against DET
	{"experiment-table2-row", []string{"experiment", filepath.Join("testdata", "golden", "experiment-row.yaml")}},
}

// TestGolden runs every golden run and compares its JSON output with
// testdata/golden/NAME.json.
func TestGolden(t *testing.T) {
	for _, g := range goldenRuns {
		t.Run(g.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.json")
			if _, err := run(t, append(g.args, "--json", out)...); err != nil {
				t.Fatalf("fabemu %s: %v", strings.Join(g.args, " "), err)
			}
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			got, err := stripRunInfo(raw)
			if err != nil {
				t.Fatalf("%v\n%s", err, raw)
			}
			path := filepath.Join("testdata", "golden", g.name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("fabemu %s: output differs from %s at %s (go test ./cmd/fabemu -run TestGolden -update rewrites it; a behaviour change is its own commit)",
					strings.Join(g.args, " "), path, firstDiff(got, want))
			}
		})
	}
}

// stripRunInfo removes every "run" object that describes the run itself
// (wall time, events per second: it has a "wall_seconds" key) and every
// other "wall_seconds", and re-indents the document. Configuration objects also named "run" stay.
func stripRunInfo(raw []byte) ([]byte, error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers exactly as written
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var strip func(v any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["run"].(map[string]any); ok {
				if _, wall := r["wall_seconds"]; wall {
					delete(x, "run")
				}
			}
			delete(x, "wall_seconds") // an experiment's total
			for _, c := range x {
				strip(c)
			}
		case []any:
			for _, c := range x {
				strip(c)
			}
		}
	}
	strip(doc)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// firstDiff names the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ": got " + strings.TrimSpace(g[i]) + ", want " + strings.TrimSpace(w[i])
		}
	}
	return "line " + strconv.Itoa(min(len(g), len(w))+1) + " (one is longer)"
}
