package report

import (
	"strings"
	"testing"
)

func TestTableWrite(t *testing.T) {
	tests := []struct {
		name  string
		table Table
		want  string
	}{
		{
			name: "title units auto alignment notes",
			table: Table{
				Title: "Trace execution time",
				Columns: []Column{
					{Name: "configuration"},
					{Name: "time", Unit: "ms"},
					{Name: "reorder memory", Unit: "KiB"},
				},
				Rows: [][]string{
					{"torus adaptive", FormatInt(1234), "256"},
					{"torus DOR", FormatInt(1502), "0"},
				},
				Notes: []string{"times include the final ACKs"},
			},
			want: `Trace execution time
configuration   time (ms)  reorder memory (KiB)
--------------  ---------  --------------------
torus adaptive      1,234                   256
torus DOR           1,502                     0
times include the final ACKs
`,
		},
		{
			name: "short rows, explicit alignment, wide cells, unicode unit",
			table: Table{
				Columns: []Column{
					{Name: "policy", Align: AlignRight},
					{Name: "latency p99", Unit: "µs"},
					{Name: "id", Align: AlignLeft},
				},
				Rows: [][]string{
					{"UI", "12.5", "1"},
					{"LW-window", "-", "22"},
					{"none"},
				},
			},
			want: `   policy  latency p99 (µs)  id
---------  ----------------  --
       UI              12.5  1
LW-window                 -  22
     none
`,
		},
		{
			name: "no rows: header and rule only, text column left",
			table: Table{
				Columns: []Column{{Name: "a"}, {Name: "bb", Unit: "B"}},
			},
			want: `a  bb (B)
-  ------
`,
		},
		{
			name: "mixed column is left-aligned",
			table: Table{
				Columns: []Column{{Name: "value"}, {Name: "x"}},
				Rows:    [][]string{{"12", "1"}, {"n/a", "2"}, {"12.5%", "3"}},
			},
			want: `value  x
-----  -
12     1
n/a    2
12.5%  3
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.table.Write(&b); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestTableWriteErrors(t *testing.T) {
	tests := []struct {
		name  string
		table Table
		want  string
	}{
		{"no columns", Table{Title: "x"}, "no columns"},
		{"row too long", Table{Columns: []Column{{Name: "a"}}, Rows: [][]string{{"1"}, {"1", "2"}}}, "row 2 has 2 cells"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.table.Write(&strings.Builder{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestTableAddRow(t *testing.T) {
	tb := Table{Columns: []Column{{Name: "k"}, {Name: "v"}}}
	tb.AddRow("a", "1")
	tb.AddRow("b", "22")
	var b strings.Builder
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "k   v\n-  --\na   1\nb  22\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestSectionWrite(t *testing.T) {
	s := Section{Title: "Summary"}
	s.Add("trace execution time", FormatInt(12345678), "ns")
	s.Add("accepted traffic", FormatFloat(0.87, 0), "bytes/ns")
	s.Add("delivery mode", "adaptive", "")
	plain := Section{Items: []KV{{Key: "seed", Value: "42"}, {Key: "waste traffic", Value: FormatPercent(0.0123)}}}
	var b strings.Builder
	if err := WriteSections(&b, s, plain); err != nil {
		t.Fatal(err)
	}
	want := `Summary
  trace execution time  12,345,678 ns
  accepted traffic            0.87 bytes/ns
  delivery mode           adaptive

seed              42
waste traffic  1.23%
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
