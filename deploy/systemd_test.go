package deploy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu"
)

// unitFile is a systemd unit or drop-in: every assignment of each key, by
// section, in file order.
type unitFile map[string]map[string][]string

// readUnit parses a unit file with systemd's syntax (sections, Key=value,
// # and ; comments, backslash continuations); anything else fails the
// test with the file and line.
func readUnit(t *testing.T, path string) unitFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(f)
	key := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		for strings.HasSuffix(line, `\`) && sc.Scan() {
			n++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(sc.Text())
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") {
				t.Fatalf("%s:%d: bad section header %q", path, n, line)
			}
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			k = strings.TrimSpace(k)
			if !ok || !key.MatchString(k) {
				t.Fatalf("%s:%d: want Key=value, got %q", path, n, line)
			}
			if section == "" {
				t.Fatalf("%s:%d: %s outside a section", path, n, k)
			}
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// last is the value in effect for a single-valued key ("" if unset).
func (u unitFile) last(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// list is a list-valued key's words, merged over its assignments (an
// empty assignment resets the list, as systemd does).
func (u unitFile) list(section, key string) []string {
	var out []string
	for _, v := range u[section][key] {
		if v == "" {
			out = nil
			continue
		}
		out = append(out, strings.Fields(v)...)
	}
	return out
}

// fsNamespacing are the settings that put a service in a mount namespace
// of its own, whose mounts (the daemon's /run/netns/NAME) never reach the
// host, with the value that turns each off.
var fsNamespacing = map[string]string{
	"ProtectSystem": "no", "ProtectHome": "no", "PrivateTmp": "no", "PrivateMounts": "no",
	"PrivateDevices": "no", "ProtectKernelTunables": "no", "ProtectKernelModules": "no",
	"ProtectKernelLogs": "no", "ProtectControlGroups": "no", "ProtectProc": "default", "ProcSubset": "all",
}

const (
	unitPath    = "fabemu.service"
	netnsPath   = "fabemu.service.d/netns.conf"
	capturePath = "fabemu.service.d/capture.conf"
)

// TestSystemdUnit checks the daemon's unit: its user, its capabilities,
// the sandbox, and that its runtime directory is where the daemon puts
// its socket.
func TestSystemdUnit(t *testing.T) {
	u := readUnit(t, unitPath)
	if !strings.HasPrefix(u.last("Service", "ExecStart"), "/usr/local/bin/fabemu run --config /etc/fabemu/run.yaml") {
		t.Errorf("ExecStart %q", u.last("Service", "ExecStart"))
	}
	if u.last("Service", "User") != "fabemu" || u.last("Service", "Group") != "fabemu" {
		t.Errorf("User %q Group %q: want fabemu, the user fabemu.sysusers creates", u.last("Service", "User"), u.last("Service", "Group"))
	}
	if a, b := u.list("Service", "AmbientCapabilities"), u.list("Service", "CapabilityBoundingSet"); !slices.Equal(a, []string{"CAP_NET_ADMIN"}) || !slices.Equal(b, a) {
		t.Errorf("capabilities: ambient %v, bounding %v; want CAP_NET_ADMIN only", a, b)
	}
	want := map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"ProtectKernelTunables": "yes", "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes",
		"ProtectControlGroups": "yes", "ProtectClock": "yes", "ProtectHostname": "yes", "ProtectProc": "invisible",
		"RestrictNamespaces": "yes", "RestrictSUIDSGID": "yes", "RestrictRealtime": "yes", "LockPersonality": "yes",
		"MemoryDenyWriteExecute": "yes", "SystemCallArchitectures": "native", "DevicePolicy": "closed",
		"DeviceAllow": "/dev/net/tun rw", "UMask": "0077", "KillSignal": "SIGTERM", "IPAddressDeny": "any",
	}
	for k, v := range want {
		if got := u.last("Service", k); got != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	if got := u.list("Service", "RestrictAddressFamilies"); !slices.Equal(got, []string{"AF_UNIX", "AF_NETLINK", "AF_INET", "AF_INET6"}) {
		t.Errorf("RestrictAddressFamilies %v: the API (unix), links (netlink), metrics (inet) and nothing else", got)
	}
	if f := u["Service"]["SystemCallFilter"]; len(f) == 0 || f[0] != "@system-service" {
		t.Errorf("SystemCallFilter %v: want the @system-service allow list first", f)
	}
	if got := u.last("Service", "RuntimeDirectory"); "/run/"+got != filepath.Dir(emu.DefaultSocket) {
		t.Errorf("RuntimeDirectory %q, but the daemon's socket is %s", got, emu.DefaultSocket)
	}
	stop, err := time.ParseDuration(u.last("Service", "TimeoutStopSec") + "s")
	if err != nil || stop <= time.Duration(emu.DefaultRunConfig().DrainTimeout)+time.Second {
		t.Errorf("TimeoutStopSec %q: want more than the drain timeout and the capture's wind-down", u.last("Service", "TimeoutStopSec"))
	}
	if u.last("Install", "WantedBy") != "multi-user.target" {
		t.Errorf("WantedBy %q", u.last("Install", "WantedBy"))
	}
}

// TestSystemdDropIns checks the drop-ins: netns.conf adds what named
// network namespaces need and turns off every setting that would hide
// them from the host; capture.conf adds what the eBPF capture needs.
func TestSystemdDropIns(t *testing.T) {
	u := readUnit(t, unitPath)
	n := readUnit(t, netnsPath)
	for _, k := range []string{"AmbientCapabilities", "CapabilityBoundingSet"} {
		if got := n.list("Service", k); !slices.Equal(got, []string{"CAP_SYS_ADMIN", "CAP_SYS_PTRACE"}) {
			t.Errorf("%s: %s adds %v, want CAP_SYS_ADMIN CAP_SYS_PTRACE", netnsPath, k, got)
		}
	}
	if got := n.last("Service", "ExecStartPre"); got != "+/usr/bin/install -d -m 0775 -g "+u.last("Service", "Group")+" /run/netns" {
		t.Errorf("%s: ExecStartPre %q: want /run/netns made writable for the unit's group, as root", netnsPath, got)
	}
	if got := n["Service"]["RestrictNamespaces"]; !slices.Equal(got, []string{"", "net"}) {
		t.Errorf("%s: RestrictNamespaces %q, want a reset, then net only", netnsPath, got)
	}
	if got := n.list("Service", "SystemCallFilter"); !slices.Equal(got, []string{"@mount"}) {
		t.Errorf("%s: SystemCallFilter %v, want @mount added (namespace files are bind mounts)", netnsPath, got)
	}
	for k, off := range fsNamespacing {
		base := u.last("Service", k)
		if base == "" || base == off {
			continue
		}
		if got := n.last("Service", k); got != off {
			t.Errorf("%s: the unit sets %s=%s, which gives the daemon a mount namespace of its own; want %s=%s", netnsPath, k, base, k, off)
		}
	}
	for k := range u["Service"] {
		if strings.HasSuffix(k, "Paths") || k == "TemporaryFileSystem" || k == "RootDirectory" {
			t.Errorf("the unit sets %s, which the netns drop-in cannot turn off", k)
		}
	}
	c := readUnit(t, capturePath)
	for _, k := range []string{"AmbientCapabilities", "CapabilityBoundingSet"} {
		if got := c.list("Service", k); !slices.Equal(got, []string{"CAP_BPF"}) {
			t.Errorf("%s: %s adds %v, want CAP_BPF", capturePath, k, got)
		}
	}
	if got := c.list("Service", "SystemCallFilter"); !slices.Equal(got, []string{"bpf"}) {
		t.Errorf("%s: SystemCallFilter %v, want bpf", capturePath, got)
	}
}

// splitSysusers splits a sysusers.d line into fields, double quotes
// grouping words.
func splitSysusers(line string) ([]string, error) {
	var out []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '"' {
			end := strings.IndexByte(line[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote")
			}
			out = append(out, line[1:end+1])
			line = line[end+2:]
			continue
		}
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			i = len(line)
		}
		out = append(out, line[:i])
		line = line[i:]
	}
	return out, nil
}

// TestSysusers checks fabemu.sysusers against sysusers.d(5) and the unit,
// and, where systemd-sysusers is installed, applies it to an empty root.
func TestSysusers(t *testing.T) {
	const path = "fabemu.sysusers"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	user := readUnit(t, unitPath).last("Service", "User")
	name := regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,30}$`)
	users := 0
	for n, line := range strings.Split(string(data), "\n") {
		if l := strings.TrimSpace(line); l == "" || l[0] == '#' {
			continue
		}
		f, err := splitSysusers(line)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n+1, err)
		}
		if len(f) < 2 || len(f) > 6 || !strings.Contains("ugmr", f[0]) || len(f[0]) != 1 {
			t.Fatalf("%s:%d: want Type Name [ID [GECOS [Home [Shell]]]] with type u, g, m or r; got %q", path, n+1, f)
		}
		if !name.MatchString(f[1]) {
			t.Errorf("%s:%d: %q is not a portable user name", path, n+1, f[1])
		}
		if f[0] == "u" {
			users++
			if f[1] != user {
				t.Errorf("%s:%d: user %q, the unit runs as %q", path, n+1, f[1], user)
			}
			if len(f) > 2 && f[2] != "-" {
				if id, err := strconv.Atoi(f[2]); err != nil || id == 0 {
					t.Errorf("%s:%d: ID %q: want - (allocate a system id)", path, n+1, f[2])
				}
			}
			if len(f) == 6 && !strings.HasSuffix(f[5], "nologin") {
				t.Errorf("%s:%d: shell %q: a daemon's user has no login", path, n+1, f[5])
			}
		}
	}
	if users != 1 {
		t.Fatalf("%s: %d users, want 1", path, users)
	}
	bin, err := exec.LookPath("systemd-sysusers")
	if err != nil {
		t.Log("systemd-sysusers not installed; checked the syntax only")
		return
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--root="+root, "-")
	cmd.Stdin = strings.NewReader(string(data))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^` + user + `:x:\d+:\d+:[^:]*:/:/usr/sbin/nologin$`).Match(passwd) {
		t.Errorf("systemd-sysusers wrote %q", passwd)
	}
}

// exposure runs systemd-analyze security offline on the unit with the
// given drop-ins (copied into a directory of their own) and returns the
// overall exposure; ok is false where systemd-analyze cannot.
func exposure(t *testing.T, dropIns ...string) (float64, bool) {
	t.Helper()
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		return 0, false
	}
	dir := t.TempDir()
	copyTo := func(src, dst string) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyTo(unitPath, filepath.Join(dir, "fabemu.service"))
	for _, d := range dropIns {
		copyTo(d, filepath.Join(dir, "fabemu.service.d", filepath.Base(d)))
	}
	out, err := exec.Command(bin, "security", "--offline=true", filepath.Join(dir, "fabemu.service")).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for fabemu\.service: (\d+\.\d)`).FindSubmatch(out)
	if m == nil {
		if err != nil && strings.Contains(string(out), "offline") {
			return 0, false // too old for --offline
		}
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v, true
}

// TestSystemdExposure keeps the exposure scores systemd-analyze security
// gives the unit at or below those recorded in docs/daemon.md.
func TestSystemdExposure(t *testing.T) {
	for _, c := range []struct {
		name    string
		dropIns []string
		max     float64
	}{
		{"unit", nil, 1.6},
		{"unit+capture", []string{capturePath}, 1.7},
		{"unit+netns", []string{netnsPath}, 4.1},
		{"unit+netns+capture", []string{netnsPath, capturePath}, 4.1},
	} {
		v, ok := exposure(t, c.dropIns...)
		if !ok {
			t.Skip("systemd-analyze with --offline is not installed")
		}
		t.Logf("%s: exposure %.1f", c.name, v)
		if v > c.max {
			t.Errorf("%s: exposure %.1f, above the %.1f recorded in docs/daemon.md", c.name, v, c.max)
		}
	}
}
