package emu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQEMUSocketConfig: a qemu-socket entry is checked for its kind: it
// needs a socket, refuses the TAP device fields with the reason, and an
// unknown kind or a socket on a TAP entry is named.
func TestQEMUSocketConfig(t *testing.T) {
	vm := func() TAPConfig {
		return TAPConfig{Name: "vm0", Kind: KindQEMUSocket, Socket: "/run/fabemu/vm0.sock", MAC: "52:54:00:12:34:56"}
	}
	for _, tc := range []struct {
		name string
		mut  func(*TAPConfig)
		want string
	}{
		{"ok", func(*TAPConfig) {}, ""},
		{"tcp", func(c *TAPConfig) { c.Socket = "127.0.0.1:5600" }, ""},
		{"long name is fine", func(c *TAPConfig) { c.Name = "a-guest-with-a-long-name" }, ""},
		{"no socket", func(c *TAPConfig) { c.Socket = "" }, "needs socket"},
		{"relative socket", func(c *TAPConfig) { c.Socket = "vm0.sock" }, "absolute unix socket path"},
		{"netns", func(c *TAPConfig) { c.Netns = "ns0" }, "netns: TAP device fields"},
		{"addrs and offload", func(c *TAPConfig) { c.Addrs = []string{"10.0.0.1/24"}; on := true; c.Offload = &on }, "addrs, offload: TAP device fields"},
		{"persist", func(c *TAPConfig) { c.Persist = true }, "persist"},
		{"bad mac", func(c *TAPConfig) { c.MAC = "52:54" }, "mac \"52:54\""},
		{"multicast mac", func(c *TAPConfig) { c.MAC = "01:00:5e:00:00:01" }, "multicast"},
		{"mtu", func(c *TAPConfig) { c.MTU = 20 }, "mtu 20"},
		{"name with slash", func(c *TAPConfig) { c.Name = "a/b" }, "name \"a/b\""},
		{"unknown kind", func(c *TAPConfig) { c.Kind = "vhost-user" }, "kind \"vhost-user\": want tap (default) or qemu-socket"},
		{"socket on a tap", func(c *TAPConfig) { c.Kind = "" }, "applies to kind qemu-socket only"},
	} {
		c := DefaultRunConfig()
		e := vm()
		tc.mut(&e)
		c.TAPs = []TAPConfig{e, {Name: "fab1"}}
		err := c.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "taps[0]: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want taps[0] and %q", tc.name, err, tc.want)
		}
	}
}

// TestLoadQEMUSocketConfig: the one-line form loads.
func TestLoadQEMUSocketConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.yaml")
	y := "taps: [{name: vm0, kind: qemu-socket, socket: /run/fabemu/vm0.sock, host: 3}, {name: fab1, netns: h1, addrs: [10.250.0.2/24]}]\n"
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadRunConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.TAPs[0].kind() != KindQEMUSocket || c.TAPs[0].Socket != "/run/fabemu/vm0.sock" || *c.TAPs[0].Host != 3 || c.TAPs[1].kind() != KindTAP {
		t.Errorf("%+v", c.TAPs)
	}
}
