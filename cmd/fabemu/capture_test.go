//go:build linux

package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCaptureOrderBadFlags: bad input is refused with one line before
// anything is loaded, so these need no privileges.
func TestCaptureOrderBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"capture", "--out", "x.pcapng"}, "--iface and --out are required"},
		{[]string{"capture", "--iface", "lo", "--out", "x", "--filter", "vlan 3"}, `unknown term "vlan"`},
		{[]string{"capture", "--iface", "lo", "--out", "x", "--attach", "xdp"}, `attach mode "xdp"`},
		{[]string{"capture", "--iface", "lo", "--out", "x", "--ring-mib", "0"}, "--ring-mib 0"},
		{[]string{"order"}, "--iface is required"},
		{[]string{"order", "--iface", "lo", "--interval", "0s"}, "--interval 0s: want at least 100ms"},
		{[]string{"order", "--iface", "lo", "--interval", "1ns"}, "--interval 1ns: want at least 100ms"},
		{[]string{"order", "--iface", "lo", "--top", "0"}, "--top 0: want at least 1"},
		{[]string{"order", "--iface", "lo", "--max-flows", "0"}, "--max-flows 0"},
		{[]string{"capture", "--iface", "lo", "--out", "x", "--snaplen", "0"}, "--snaplen 0"},
		{[]string{"trace", "stats", "testdata/capture-small.pcap", "--sort-window", "-1"}, "--sort-window -1"},
		{[]string{"trace", "stats", "testdata/capture-small.pcap", "--spc-block", "0"}, "--spc-block 0"},
	} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(c.args)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line with %q", c.args, err, c.want)
		}
	}
}
