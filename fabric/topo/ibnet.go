package topo

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// LoadIBNetDiscover reads the default text output of the InfiniBand
// ibnetdiscover tool (also with -g grouping) and returns the switches, the
// hosts and the switch-to-switch links it describes. name is the file name
// used in error messages.
//
// Recognised lines (leading and trailing blanks ignored):
//
//	# comment                                       ignored
//	vendid=0x2c9 devid=0xc738 sysimgguid=0x...       node attributes, checked and ignored
//	switchguid=0x...(...) caguid=0x... rtguid=0x...
//	Switch 36 "S-0002c903007b5a40" # "MF0;sw1:SX6036/U1" enhanced port 0 lid 3 lmc 0
//	Ca 2 "H-0002c90300a1b2c0" # "host1 HCA-1"
//	Rt 2 "R-..." # "..."
//	[1] "H-0002c90300a1b2c0"[1](2c90300a1b2c1) # "host1 HCA-1" lid 5 4xQDR   (switch port)
//	[1](2c90300a1b2c1) "S-0002c903007b5a40"[1] # lid 5 lmc 0 "sw1" lid 3 4xQDR (CA port)
//	Chassis 1 (guid 0x...), Non-Chassis Nodes, Hostname: ...   (-g output), ignored
//
// Port lines may carry "[ext N]" after a port number. Mapping to a Topology:
//
//   - every Switch block becomes a switch with the block's port count, in
//     file order; InfiniBand port p (1-based; port 0 is the management
//     port) becomes Topology port p-1. Its name is the node description
//     without a leading "MF0;", or the "S-<guid>" id if the description is
//     empty or not unique;
//   - every CA port cabled to a switch becomes a host on that switch port,
//     named by the CA's description ("host1 HCA-1"), with "/P" appended
//     when several ports of the CA are cabled, and the "H-<guid>" id added
//     when names collide. Hosts are ordered by switch, then port;
//   - every switch-to-switch cable becomes one link. The output lists each
//     cable twice, once from each end: both must agree, and a cable listed
//     from one end only, or an end listed with two different peers, is an
//     error naming both lines;
//   - routers and their cables are ignored; a CA cabled directly to another
//     CA is an error (there is no switch to attach it to).
//
// A switch referenced by a port line must have its own Switch block (its
// port count is not otherwise known). A CA need not: its hosts can be
// taken from the switch side alone.
func LoadIBNetDiscover(name string, r io.Reader) (*Topology, error) {
	p := ibParser{file: name, nodes: map[string]*ibNode{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fileErr(name, p.line+1, "read: %v", err)
	}
	return p.topology()
}

type ibNode struct {
	id    string // "S-0002c903007b5a40"
	kind  byte   // 'S', 'H' or 'R'
	ports int    // from the block header; 0 if only referenced
	desc  string // node description
	line  int    // line of the block header; 0 if only referenced
	conns map[int]ibEnd
}

type ibEnd struct {
	id   string
	port int
	line int
}

type ibParser struct {
	file  string
	line  int
	nodes map[string]*ibNode
	order []*ibNode // nodes with a block, in file order
	cur   *ibNode
}

func (p *ibParser) errf(format string, args ...any) error {
	return fileErr(p.file, p.line, format, args...)
}

func (p *ibParser) node(id string) *ibNode {
	n := p.nodes[id]
	if n == nil {
		n = &ibNode{id: id, kind: id[0], conns: map[int]ibEnd{}}
		p.nodes[id] = n
	}
	return n
}

func (p *ibParser) parseLine(raw string) error {
	s := strings.TrimSpace(raw)
	switch {
	case s == "":
		return nil
	case s[0] == '#':
		return nil
	case s[0] == '[':
		return p.portLine(s)
	}
	if key, val, ok := strings.Cut(s, "="); ok && !strings.ContainsAny(key, " \t\"") {
		return p.attrLine(key, val)
	}
	word, rest, _ := strings.Cut(s, " ")
	if i := strings.IndexByte(word, '\t'); i >= 0 {
		word, rest = s[:i], s[i+1:]
	}
	switch word {
	case "Switch", "Ca", "Rt":
		return p.nodeLine(word, strings.TrimSpace(rest))
	case "Chassis", "Hostname:":
		p.cur = nil
		return nil
	case "Non-Chassis":
		p.cur = nil
		return nil
	}
	return p.errf("unrecognised line %q: expected a comment, an attribute (vendid=...), a Switch/Ca/Rt header or a [port] line", clip(s))
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// attrLine checks vendid=, devid=, sysimgguid=, switchguid=, caguid=, rtguid=.
func (p *ibParser) attrLine(key, val string) error {
	switch key {
	case "vendid", "devid", "sysimgguid", "switchguid", "caguid", "rtguid":
	default:
		return p.errf("unknown attribute %q (expected vendid, devid, sysimgguid, switchguid, caguid or rtguid)", key)
	}
	p.cur = nil // attributes start a new node block
	val, _, _ = strings.Cut(val, "#")
	val = strings.TrimSpace(val)
	v, paren, hasParen := strings.Cut(val, "(")
	if !strings.HasPrefix(v, "0x") || !isHex(v[2:]) {
		return p.errf("%s=%q: expected a hexadecimal value 0x...", key, val)
	}
	if hasParen {
		g, tail, ok := strings.Cut(paren, ")")
		if !ok || !isHex(g) || strings.TrimSpace(tail) != "" {
			return p.errf("%s=%q: expected 0x<guid>(<port guid>)", key, val)
		}
	}
	return nil
}

func isHex(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// nodeLine parses `Switch 36 "S-..." # "desc" ...` (and Ca, Rt).
func (p *ibParser) nodeLine(word, rest string) error {
	want := map[string]byte{"Switch": 'S', "Ca": 'H', "Rt": 'R'}[word]
	num, rest, _ := cutSpace(rest)
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || n > 255 {
		return p.errf("%s header: port count %q: expected a number from 1 to 255", word, num)
	}
	id, rest, err := quoted(rest)
	if err != nil {
		return p.errf("%s header: node id: %v", word, err)
	}
	if err := checkID(id); err != nil {
		return p.errf("%s header: %v", word, err)
	}
	if id[0] != want {
		return p.errf("%s header: id %q should start with %c-", word, id, want)
	}
	rest = strings.TrimSpace(rest)
	desc := ""
	if rest != "" {
		if rest[0] != '#' {
			return p.errf("%s header: unexpected %q after the node id (expected # \"description\")", word, clip(rest))
		}
		desc = commentDesc(rest[1:])
	}
	node := p.node(id)
	if node.line != 0 {
		return p.errf("node %s described twice (first block at line %d)", id, node.line)
	}
	node.ports, node.desc, node.line = n, desc, p.line
	p.order = append(p.order, node)
	p.cur = node
	return nil
}

// commentDesc returns the text between the first and the last double quote
// of a comment, or "".
func commentDesc(c string) string {
	i, j := strings.IndexByte(c, '"'), strings.LastIndexByte(c, '"')
	if i < 0 || j <= i {
		return ""
	}
	return c[i+1 : j]
}

func cutSpace(s string) (head, tail string, ok bool) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i:], true
}

// quoted reads a leading "..." (after blanks) and returns its content.
func quoted(s string) (string, string, error) {
	s = strings.TrimLeft(s, " \t")
	if s == "" || s[0] != '"' {
		return "", "", fmt.Errorf("expected a quoted id like \"S-0002c903007b5a40\", got %q", clip(s))
	}
	j := strings.IndexByte(s[1:], '"')
	if j < 0 {
		return "", "", fmt.Errorf("unterminated quote in %q", clip(s))
	}
	return s[1 : 1+j], s[2+j:], nil
}

func checkID(id string) error {
	if len(id) < 3 || id[1] != '-' || !strings.ContainsRune("SHR", rune(id[0])) || !isHex(id[2:]) {
		return fmt.Errorf("bad node id %q: expected S-, H- or R- followed by a hexadecimal GUID", id)
	}
	return nil
}

// bracketNum reads "[N]" at the start of s, then an optional "[ext N]".
func bracketNum(s string) (int, string, error) {
	if s == "" || s[0] != '[' {
		return 0, s, fmt.Errorf("expected [port], got %q", clip(s))
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return 0, s, fmt.Errorf("missing ] in %q", clip(s))
	}
	n, err := strconv.Atoi(s[1:end])
	if err != nil || n < 0 || n > 255 {
		return 0, s, fmt.Errorf("port number %q: expected 0..255", clip(s[1:end]))
	}
	s = s[end+1:]
	if strings.HasPrefix(s, "[ext ") {
		e := strings.IndexByte(s, ']')
		if e < 0 {
			return 0, s, fmt.Errorf("missing ] in %q", clip(s))
		}
		if _, err := strconv.Atoi(s[5:e]); err != nil {
			return 0, s, fmt.Errorf("extended port %q: expected a number", s[5:e])
		}
		s = s[e+1:]
	}
	return n, s, nil
}

// parenGUID skips an optional "(hex)" after blanks.
func parenGUID(s string) (string, error) {
	t := strings.TrimLeft(s, " \t")
	if t == "" || t[0] != '(' {
		return s, nil
	}
	end := strings.IndexByte(t, ')')
	if end < 0 || !isHex(t[1:end]) {
		return s, fmt.Errorf("bad port GUID in %q: expected (hexadecimal)", clip(t))
	}
	return t[end+1:], nil
}

// portLine parses `[p][ext n](guid) "X-guid"[q][ext m] (guid) # comment`.
func (p *ibParser) portLine(s string) error {
	if p.cur == nil {
		return p.errf("port line outside a Switch, Ca or Rt block")
	}
	port, rest, err := bracketNum(s)
	if err != nil {
		return p.errf("port line: %v", err)
	}
	if port < 1 || port > p.cur.ports {
		return p.errf("port line: port %d out of range for %s with %d ports (1..%d)", port, p.cur.id, p.cur.ports, p.cur.ports)
	}
	if rest, err = parenGUID(rest); err != nil {
		return p.errf("port line: %v", err)
	}
	id, rest, err := quoted(rest)
	if err != nil {
		return p.errf("port line: remote node: %v", err)
	}
	if err := checkID(id); err != nil {
		return p.errf("port line: %v", err)
	}
	rport, rest, err := bracketNum(rest)
	if err != nil {
		return p.errf("port line: remote port: %v", err)
	}
	if rport < 1 {
		return p.errf("port line: remote port %d: ports are numbered from 1", rport)
	}
	if rest, err = parenGUID(rest); err != nil {
		return p.errf("port line: %v", err)
	}
	rest = strings.TrimSpace(rest)
	desc := ""
	if rest != "" {
		if rest[0] != '#' {
			return p.errf("port line: unexpected %q after the remote port (expected # comment)", clip(rest))
		}
		desc = commentDesc(rest[1:])
	}
	if prev, dup := p.cur.conns[port]; dup {
		return p.errf("port %d of %s listed twice (first at line %d)", port, p.cur.id, prev.line)
	}
	if id == p.cur.id && rport == port {
		return p.errf("port %d of %s is cabled to itself", port, id)
	}
	p.cur.conns[port] = ibEnd{id: id, port: rport, line: p.line}
	remote := p.node(id)
	if remote.desc == "" && remote.line == 0 && p.cur.kind == 'S' {
		remote.desc = desc // the description of a CA seen only from the switch side
	}
	return nil
}

// topology checks both ends of every cable and builds the Topology.
func (p *ibParser) topology() (*Topology, error) {
	t := &Topology{Name: p.file, Kind: KindGeneric}
	swIndex := map[string]int{}
	for _, n := range p.order {
		if n.kind == 'S' {
			swIndex[n.id] = len(t.Switches)
			t.Switches = append(t.Switches, Switch{Name: n.id, Ports: n.ports})
		}
	}
	if len(t.Switches) == 0 {
		return nil, fileErr(p.file, 0, "no Switch blocks found")
	}
	// Switch names: the description when present and unique.
	count := map[string]int{}
	for _, n := range p.order {
		if n.kind == 'S' {
			count[strings.TrimPrefix(n.desc, "MF0;")]++
		}
	}
	for _, n := range p.order {
		if d := strings.TrimPrefix(n.desc, "MF0;"); n.kind == 'S' && d != "" && count[d] == 1 {
			t.Switches[swIndex[n.id]].Name = d
		}
	}

	type caPort struct {
		ca   *ibNode
		port int
		at   PortRef
	}
	var cas []caPort
	seenCA := map[ibEnd]bool{}
	linked := map[[2]ibEnd]bool{}
	for _, n := range p.order {
		ports := make([]int, 0, len(n.conns))
		for q := range n.conns {
			ports = append(ports, q)
		}
		sort.Ints(ports)
		for _, q := range ports {
			e := n.conns[q]
			r := p.nodes[e.id]
			here := ibEnd{id: n.id, port: q}
			there := ibEnd{id: e.id, port: e.port}
			if r.line == 0 && r.kind == 'S' {
				return nil, fileErr(p.file, e.line, "switch %s is referenced but has no Switch block (its port count is unknown)", e.id)
			}
			if r.line != 0 {
				if e.port > r.ports {
					return nil, fileErr(p.file, e.line, "%s port %d: remote port %d out of range for %s with %d ports (header at line %d)",
						n.id, q, e.port, r.id, r.ports, r.line)
				}
				back, ok := r.conns[e.port]
				if !ok && r.kind != 'R' && n.kind != 'R' {
					return nil, fileErr(p.file, e.line, "%s port %d is cabled to %s port %d, but the block of %s (line %d) does not list its port %d",
						n.id, q, e.id, e.port, e.id, r.line, e.port)
				}
				if ok && (back.id != n.id || back.port != q) {
					return nil, fileErr(p.file, e.line, "inconsistent cable: this line says %s port %d <-> %s port %d, but line %d says %s port %d <-> %s port %d",
						n.id, q, e.id, e.port, back.line, e.id, e.port, back.id, back.port)
				}
			}
			switch {
			case n.kind == 'R' || r.kind == 'R':
				// Routers are outside the model.
			case n.kind == 'S' && r.kind == 'S':
				key := [2]ibEnd{here, there}
				if there.id < here.id || there.id == here.id && there.port < here.port {
					key = [2]ibEnd{there, here}
				}
				if !linked[key] {
					linked[key] = true
					t.Links = append(t.Links, Link{
						A: PortRef{swIndex[key[0].id], key[0].port - 1},
						B: PortRef{swIndex[key[1].id], key[1].port - 1},
					})
				}
			case n.kind == 'H' && r.kind == 'H':
				return nil, fileErr(p.file, e.line, "CA %s port %d is cabled directly to CA %s: back-to-back links without a switch are not supported", n.id, q, e.id)
			default:
				ca, caPortN, sw, swPort := n, q, r, e.port
				if n.kind == 'S' {
					ca, caPortN, sw, swPort = r, e.port, n, q
				}
				k := ibEnd{id: ca.id, port: caPortN}
				if !seenCA[k] {
					seenCA[k] = true
					cas = append(cas, caPort{ca: ca, port: caPortN, at: PortRef{swIndex[sw.id], swPort - 1}})
				}
			}
		}
	}
	sort.Slice(t.Links, func(i, j int) bool {
		a, b := t.Links[i], t.Links[j]
		if a.A != b.A {
			return less(a.A, b.A)
		}
		return less(a.B, b.B)
	})
	sort.Slice(cas, func(i, j int) bool { return less(cas[i].at, cas[j].at) })
	cabled := map[*ibNode]int{}
	for _, c := range cas {
		cabled[c.ca]++
	}
	names := make([]string, len(cas))
	used := map[string]int{}
	for i, c := range cas {
		nm := c.ca.desc
		if nm == "" {
			nm = c.ca.id
		}
		if cabled[c.ca] > 1 {
			nm = fmt.Sprintf("%s/%d", nm, c.port)
		}
		names[i] = nm
		used[nm]++
	}
	for i, c := range cas {
		if used[names[i]] > 1 {
			names[i] = fmt.Sprintf("%s (%s/%d)", names[i], c.ca.id, c.port)
		}
		t.Hosts = append(t.Hosts, Host{Name: names[i], At: c.at})
	}
	if len(t.Hosts) == 0 {
		return nil, fileErr(p.file, 0, "no CA port is cabled to a switch: the fabric has no hosts")
	}
	if err := t.Finish(); err != nil {
		return nil, fileErr(p.file, 0, "%v", err)
	}
	return t, nil
}

func less(a, b PortRef) bool {
	if a.Switch != b.Switch {
		return a.Switch < b.Switch
	}
	return a.Port < b.Port
}
