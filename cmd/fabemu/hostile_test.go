package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeFile writes a test input and returns its path.
func writeFile(t *testing.T, dir, name string, write func(w *bufio.Writer)) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	write(w)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func text(s string) func(*bufio.Writer) { return func(w *bufio.Writer) { w.WriteString(s) } }

// TestHostileInputs runs the binary on inputs meant to break it: every
// case must exit non-zero within its time limit with exactly one line on
// stderr, starting "fabemu:" and naming the culprit, and never a stack
// trace.
func TestHostileInputs(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()

	// A 100 MB CSV trace on one line: the reader must give up at its
	// line limit, not buffer the line.
	longCSV := writeFile(t, dir, "long.csv", func(w *bufio.Writer) {
		chunk := bytes.Repeat([]byte("9"), 1<<20)
		for range 100 {
			w.Write(chunk)
		}
	})
	// A pcap whose first record declares a 4 GB frame.
	bigFrame := writeFile(t, dir, "bigframe.pcap", func(w *bufio.Writer) {
		le := binary.LittleEndian
		hdr := make([]byte, 24)
		le.PutUint32(hdr[0:], 0xa1b2c3d4)
		le.PutUint16(hdr[4:], 2)
		le.PutUint16(hdr[6:], 4)
		le.PutUint32(hdr[16:], 65535)
		le.PutUint32(hdr[20:], 1)
		rec := make([]byte, 16)
		le.PutUint32(rec[8:], 0xffffffff)
		le.PutUint32(rec[12:], 0xffffffff)
		w.Write(hdr)
		w.Write(rec)
	})
	// A pcapng whose enhanced packet block declares a 4 GB length.
	bigBlock := writeFile(t, dir, "bigblock.pcapng", func(w *bufio.Writer) {
		le := binary.LittleEndian
		put := func(vs ...uint32) {
			for _, v := range vs {
				binary.Write(w, le, v)
			}
		}
		put(0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0xffffffff, 0xffffffff, 28) // section header, version 1.0, length unknown
		put(1, 20, 1, 65535, 20)                                       // interface: Ethernet, snaplen 65535
		put(6, 0xfffffff0, 0, 0, 0, 0xffffff00, 0xffffff00)            // enhanced packet block of 4 GB
	})
	// A billion-laughs alias bomb under a known key: nine levels of nine
	// aliases each would expand to 9^9 entries.
	aliasBomb := writeFile(t, dir, "bomb.yaml", func(w *bufio.Writer) {
		w.WriteString("topology:\n  k: [&a [1,1,1,1,1,1,1,1,1]")
		prev := "a"
		for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
			fmt.Fprintf(w, ", &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]", n, prev, prev, prev, prev, prev, prev, prev, prev, prev)
			prev = n
		}
		w.WriteString("]\n")
	})
	deep := writeFile(t, dir, "deep.yaml", text("topology: "+strings.Repeat("[", 100000)+strings.Repeat("]", 100000)+"\n"))
	dupKeys := writeFile(t, dir, "dup.yaml", text("topology:\n  kind: torus\n  kind: mesh\n"))
	selfLoop := writeFile(t, dir, "selfloop.yaml", text(`switches:
  - {name: s0, ports: 4}
hosts:
  - {name: h0, switch: s0, port: 0}
links:
  - a: {switch: s0, port: 1}
    b: {switch: s0, port: 2}
`))
	dupLink := writeFile(t, dir, "duplink.yaml", text(`switches:
  - {name: s0, ports: 4}
  - {name: s1, ports: 4}
hosts:
  - {name: h0, switch: s0, port: 0}
  - {name: h1, switch: s1, port: 0}
links:
  - a: {switch: s0, port: 1}
    b: {switch: s1, port: 1}
  - a: {switch: s0, port: 1}
    b: {switch: s1, port: 1}
`))
	// 100k switches in a chain: the routing tables of a generic topology
	// are switches^2, so the memory estimate must refuse it.
	huge := writeFile(t, dir, "huge.yaml", func(w *bufio.Writer) {
		const n = 100000
		w.WriteString("switches:\n")
		for i := range n {
			fmt.Fprintf(w, "  - {name: s%d, ports: 3}\n", i)
		}
		w.WriteString("hosts:\n")
		for i := range n {
			fmt.Fprintf(w, "  - {name: h%d, switch: s%d, port: 0}\n", i, i)
		}
		w.WriteString("links:\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(w, "  - {a: {switch: s%d, port: 1}, b: {switch: s%d, port: 2}}\n", i-1, i)
		}
	})
	goodCSV := writeFile(t, dir, "good.csv", text("arrival_ns,initiator,device,offset,size,op,sync,service_ns\n0,0,0,0,4096,R,0,0\n"))
	topoCfg := func(p string) string {
		return writeFile(t, dir, filepath.Base(p)+".cfg.yaml", text("topology:\n  kind: file\n  path: "+p+"\n"))
	}

	cases := []struct {
		name  string
		args  []string
		want  string // the culprit the line must name
		limit time.Duration
	}{
		{"trace /dev/zero", []string{"trace", "stats", "/dev/zero"}, "/dev/zero", 5 * time.Second},
		{"trace /dev/urandom", []string{"trace", "stats", "/dev/urandom"}, "/dev/urandom", 5 * time.Second},
		{"srt /dev/zero", []string{"trace", "stats", "--format", "srt", "/dev/zero"}, "/dev/zero", 5 * time.Second},
		{"srt /dev/urandom", []string{"trace", "stats", "--format", "srt", "/dev/urandom"}, "/dev/urandom", 5 * time.Second},
		{"csv /dev/zero", []string{"trace", "stats", "--format", "csv", "/dev/zero"}, "/dev/zero", 5 * time.Second},
		{"pcap /dev/urandom", []string{"trace", "stats", "--format", "pcap", "/dev/urandom"}, "/dev/urandom", 5 * time.Second},
		{"replay /dev/urandom", []string{"replay", "--trace", "/dev/urandom", "--format", "srt"}, "/dev/urandom", 5 * time.Second},
		{"100 MB one-line csv", []string{"trace", "stats", "--format", "csv", longCSV}, "long.csv", 5 * time.Second},
		{"pcap 4 GB frame", []string{"trace", "stats", bigFrame}, "bigframe.pcap", 5 * time.Second},
		{"pcapng 4 GB block", []string{"trace", "stats", bigBlock}, "bigblock.pcapng", 5 * time.Second},
		{"yaml alias bomb", []string{"sim", "--config", aliasBomb}, "bomb.yaml", 5 * time.Second},
		{"yaml deep nesting", []string{"sim", "--config", deep}, "deep.yaml", 5 * time.Second},
		{"yaml duplicate keys", []string{"sim", "--config", dupKeys}, "dup.yaml", 5 * time.Second},
		{"topology self-loop", []string{"sim", "--config", topoCfg(selfLoop), "--duration", "1us"}, "selfloop.yaml", 5 * time.Second},
		{"topology duplicate link", []string{"sim", "--config", topoCfg(dupLink), "--duration", "1us"}, "duplink.yaml", 5 * time.Second},
		{"topology 100k switches", []string{"sim", "--config", topoCfg(huge), "--duration", "1us"}, "huge.yaml", 30 * time.Second},
		{"million-switch torus", []string{"sim", "--set", "topology.k=[1000,1000]"}, "topology.k", time.Second},
		{"bad --max-memory", []string{"sim", "--max-memory", "lots"}, "--max-memory", 5 * time.Second},
		{"negative --load", []string{"sim", "--load", "-1"}, "load", 5 * time.Second},
		{"unknown --set key", []string{"sim", "--set", "topology.colour=red"}, "topology.colour", 5 * time.Second},
		{"output onto input", []string{"trace", "convert", goodCSV, goodCSV, "--to", "csv"}, "good.csv", 5 * time.Second},
		{"output onto config", []string{"sim", "--config", dupKeys, "--json", dupKeys}, "dup.yaml", 5 * time.Second},
		{"json into /dev/full", []string{"sim", "--duration", "1us", "--json", "/dev/full"}, "/dev/full", 10 * time.Second},
		{"json onto a directory", []string{"sim", "--duration", "1us", "--json", dir}, "directory", 10 * time.Second},
		{"experiment over --max-memory", []string{"experiment", "paper000-corner2-recn", "--max-memory", "1MiB"}, "--max-memory", 5 * time.Second},
		{"replay over --max-memory", []string{"replay", "--max-memory", "1MiB"}, "--max-memory", 5 * time.Second},
		{"sweep over --max-memory", []string{"sim", "--sweep-load", "0.1:0.9:0.1", "--jobs", "4", "--max-memory", "40MiB"}, "x 4 jobs", 5 * time.Second},
		{"experiment missing", []string{"experiment", filepath.Join(dir, "none.yaml")}, "none.yaml", 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectRefusal(t, bin, c.args, c.want, c.limit)
		})
	}
}

// hangGuard is how long a refused command may run before the test calls
// it hung. It is not a speed target: a refusal is checked by what the
// process did (one line naming the culprit, a small peak memory), not by
// the wall clock, which a loaded machine stretches many times over.
const hangGuard = 3 * time.Minute

// maxRefusalRSS is the most memory a refused command may have touched:
// a refusal comes from checking the input or the estimate, before
// anything of the size it refuses is built.
const maxRefusalRSS = 1 << 30

// expectRefusal runs bin with args and checks that it exits non-zero
// with exactly one line on stderr, starting "fabemu:", naming want,
// without a stack trace, and without having grown large. limit is the
// time the case takes on an idle machine; it only widens the hang guard.
func expectRefusal(t *testing.T, bin string, args []string, want string, limit time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard+limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	msg := stderr.String()
	if ctx.Err() != nil {
		t.Fatalf("no exit within %v: hung; stderr %q", hangGuard+limit, msg)
	}
	if err == nil {
		t.Fatalf("exit 0; stderr %q", msg)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss*1024 > maxRefusalRSS {
		t.Errorf("peak memory %d MiB before the refusal, want under %d MiB", ru.Maxrss>>10, maxRefusalRSS>>20)
	}
	if strings.Contains(msg, "goroutine ") || strings.Contains(msg, "panic:") {
		t.Fatalf("stack trace:\n%.2000s", msg)
	}
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "fabemu:") {
		t.Fatalf("stderr is not one fabemu: line:\n%.2000s", msg)
	}
	t.Log(lines[0])
	if !strings.Contains(lines[0], want) {
		t.Errorf("stderr %q does not name %q", lines[0], want)
	}
	if len(lines[0]) > 400 {
		t.Errorf("line is %d bytes long", len(lines[0]))
	}
	return lines[0]
}
