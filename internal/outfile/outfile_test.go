package outfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// leftovers lists the temporary files in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteNewAndReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := Write(path, nil, writeString("one\n")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "one\n" {
		t.Fatalf("got %q", got)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644", st.Mode().Perm())
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, nil, writeString("two\n")); err != nil {
		t.Fatal(err)
	}
	st, _ = os.Stat(path)
	if got := readFile(t, path); got != "two\n" || st.Mode().Perm() != 0o644 {
		t.Fatalf("got %q mode %v", got, st.Mode().Perm())
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

// TestFailedWriteKeepsPreviousFile: a write that fails half way (more than
// a buffer's worth already written) leaves the previous file as it was.
func TestFailedWriteKeepsPreviousFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	if err := Write(path, nil, writeString("good\n")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("the producer failed")
	err := Write(path, nil, func(w io.Writer) error {
		if _, err := io.WriteString(w, strings.Repeat("partial\n", 100_000)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the producer's", err)
	}
	if got := readFile(t, path); got != "good\n" {
		t.Fatalf("previous file replaced: %d bytes", len(got))
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}

	// Same through Create / Abort.
	o, err := Create(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.WriteString(strings.Repeat("x", 1<<20))
	o.Abort()
	if got := readFile(t, path); got != "good\n" {
		t.Fatalf("Abort replaced the file: %d bytes", len(got))
	}
	if err := o.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

func TestDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	for _, size := range []int{10, 1 << 20} { // error at Commit's flush, at a Write
		err := Write("/dev/full", nil, writeString(strings.Repeat("x", size)))
		if err == nil || err.Error() != "write /dev/full: no space left on device" {
			t.Errorf("%d bytes: err = %v, want a write error naming /dev/full", size, err)
		}
	}
	st, err := os.Stat("/dev/full")
	if err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/full is no longer a character device: %v %v", st.Mode(), err)
	}
}

func TestDevNull(t *testing.T) {
	if _, err := os.Stat("/dev/null"); err != nil {
		t.Skip("no /dev/null on this system")
	}
	if err := Write("/dev/null", nil, writeString("discarded")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat("/dev/null"); st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatal("/dev/null replaced")
	}
}

func TestStdoutAndClosedPipe(t *testing.T) {
	var sb strings.Builder
	if err := Write(Stdout, &sb, writeString("to stdout")); err != nil || sb.String() != "to stdout" {
		t.Fatalf("got %q, %v", sb.String(), err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	err = Write(Stdout, w, writeString("nobody reads this"))
	if err == nil || err.Error() != "write standard output: broken pipe" {
		t.Fatalf("write to a closed pipe: err = %v", err)
	}
}

func TestDirectory(t *testing.T) {
	dir := t.TempDir()
	want := dir + " is a directory"
	if _, err := Create(dir, nil); err == nil || err.Error() != want {
		t.Errorf("Create: %v, want %q", err, want)
	}
	if err := Check(dir); err == nil || err.Error() != want {
		t.Errorf("Check: %v, want %q", err, want)
	}
	if l := leftovers(t, filepath.Dir(dir)); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	srtDir := filepath.Join(dir, "day")
	if err := os.Mkdir(srtDir, 0o755); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.csv")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		out, want string
	}{
		{"", ""},
		{"-", ""},
		{filepath.Join(dir, "new.csv"), ""},
		{in, in + " is also an input"},
		{link, link + " is the input " + in},
		{hard, hard + " is the input " + in},
		{dir + "/./in.csv", "is the input " + in},
		{filepath.Join(dir, "no", "such", "dir.json"), "create " + filepath.Join(dir, "no", "such", "dir.json") + ": no such file or directory"},
		{filepath.Join(in, "x.json"), "create " + filepath.Join(in, "x.json") + ": not a directory"},
		{filepath.Join(srtDir, "out.json"), filepath.Join(srtDir, "out.json") + " is inside the input directory " + srtDir},
	} {
		err := Check(tt.out, "other.csv", in, srtDir)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%q): %v", tt.out, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Check(%q) = %v, want %q", tt.out, err, tt.want)
		}
	}
}

// TestSymlinkKept: writing through a symbolic link replaces the file it
// points to and keeps the link.
func TestSymlinkKept(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "link.json")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.json", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, nil, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", st.Mode(), err)
	}
	if got := readFile(t, real); got != "new" {
		t.Fatalf("target %q", got)
	}
}

func TestMissingDirectoryNamesTarget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "out.json")
	_, err := Create(path, nil)
	if err == nil || err.Error() != "create "+path+": no such file or directory" {
		t.Fatalf("err = %v", err)
	}
}

func TestSame(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard")
	if err := os.Link(a, hard); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink("new", dangling); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Symlink(dir, sub); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{a, hard, true},
		{a, filepath.Join(sub, "a"), true},
		{dangling, filepath.Join(dir, "new"), true},
		{filepath.Join(sub, "new"), filepath.Join(dir, "new"), true},
		{filepath.Join(dir, "new"), filepath.Join(dir, "other"), false},
		{"-", "/dev/stdout", true},
		{"-", "/dev/stderr", false},
		{"", "", false},
		{a, filepath.Join(dir, "new"), false},
	} {
		if got := Same(c.a, c.b); got != c.want {
			t.Errorf("Same(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestTemporariesForgotten(t *testing.T) {
	dir := t.TempDir()
	o, err := Create(filepath.Join(dir, "out"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Temporaries()); n != 1 {
		t.Fatalf("%d temporaries while writing, want 1", n)
	}
	o.Abort()
	if n := len(Temporaries()); n != 0 {
		t.Errorf("%d temporaries after Abort, want 0", n)
	}
	o, _ = Create(filepath.Join(dir, "out"), nil)
	o.WriteString("x")
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := len(Temporaries()); n != 0 {
		t.Errorf("%d temporaries after Commit, want 0", n)
	}
}
