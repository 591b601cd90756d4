package replay

// Packet captures as a replay source: each frame of a pcap or pcapng file
// becomes one message per destination host, from the host of its source
// endpoint, sized by the frame's original length (docs/capture.md).

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/inputfile"
	"github.com/fabemu/fabemu/internal/rng"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/reorder"
	"github.com/fabemu/fabemu/tracefmt"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"github.com/fabemu/fabemu/tracefmt/pcap"
)

// Endpoint mappings of a capture: which address names a station.
const (
	MapByAuto = "auto" // MACs where the link type carries both, else IP addresses
	MapByMAC  = "mac"
	MapByIP   = "ip"
)

// IsCapture reports whether the configured trace is a packet capture: the
// format says so, or it is auto and the file starts with a pcap or pcapng
// magic number (inside gzip or bzip2 too).
func (r ReplayConfig) IsCapture() (bool, error) {
	if r.Trace == "" {
		return false, nil
	}
	if err := r.checkSeekable(); err != nil {
		return false, err
	}
	f, err := tracefmt.ParseFormat(r.Format)
	if err != nil {
		return false, err
	}
	if tracefmt.IsCapture(f) {
		return true, nil
	}
	if f != tracefmt.Auto {
		return false, nil
	}
	st, err := os.Stat(r.Trace)
	if err != nil || st.IsDir() {
		return false, nil // the block-trace opener reports it
	}
	fh, err := os.Open(r.Trace)
	if err != nil {
		return false, fmt.Errorf("replay.trace: %w", err)
	}
	defer fh.Close()
	br, closer, err := tracefmt.Decompress(fh, r.Trace)
	if err != nil {
		return false, nil
	}
	defer closer.Close()
	head, _ := br.Peek(4)
	return tracefmt.IsCapture(tracefmt.Sniff(head)), nil
}

// checkSeekable refuses a trace that cannot be read more than once: a
// replay reads its trace to sniff the format, to scan the window and to
// run, so a FIFO would hang on the second open (or give a truncated
// stream to the run).
func (r ReplayConfig) checkSeekable() error {
	st, err := os.Stat(r.Trace)
	if err != nil {
		return nil // the opener reports it
	}
	if m := st.Mode(); m&os.ModeNamedPipe != 0 || m&os.ModeSocket != 0 {
		return fmt.Errorf("replay.trace %s is a pipe: a replay reads its trace more than once (a scan of the window, then the run); write it to a file first", r.Trace)
	}
	return nil
}

// endpoint is a station of a capture: a MAC or an IP address.
type endpoint struct {
	mac pcap.MAC
	ip  netip.Addr // valid for an IP endpoint
}

func (e endpoint) String() string {
	if e.ip.IsValid() {
		return e.ip.String()
	}
	return e.mac.String()
}

// parseEndpoint reads a MAC ("aa:bb:cc:dd:ee:ff") or an IP address.
func parseEndpoint(s string) (endpoint, error) {
	if ip, err := netip.ParseAddr(s); err == nil {
		return endpoint{ip: ip.Unmap()}, nil
	}
	if hw, err := net.ParseMAC(s); err == nil && len(hw) == 6 {
		var e endpoint
		copy(e.mac[:], hw)
		return e, nil
	}
	return endpoint{}, fmt.Errorf("%q is neither a MAC (aa:bb:cc:dd:ee:ff) nor an IP address", s)
}

// hostMap places endpoints on hosts: from a map file, or in order of first
// appearance onto a permutation of the hosts drawn from the run seed. The
// pre-scan fills it; the replay reads the same endpoints again.
type hostMap struct {
	hosts   int
	file    string
	fixed   map[endpoint]int // from the map file
	perm    []int            // seeded order of the hosts
	seen    map[endpoint]int // endpoint -> host, as met
	order   []endpoint       // in order of first appearance
	mapped  []int            // hosts holding an endpoint, ascending
	capture string
}

func newHostMap(hosts int, seed uint64, file string) (*hostMap, error) {
	m := &hostMap{hosts: hosts, file: file, seen: map[endpoint]int{}}
	if file == "" {
		m.perm = rng.Stream(seed, "replay.capture.hosts", 0).Perm(hosts)
		return m, nil
	}
	fixed, err := readHostMap(file, hosts)
	if err != nil {
		return nil, err
	}
	m.fixed = fixed
	return m, nil
}

// host returns the host of endpoint e, first met in record rec.
func (m *hostMap) host(e endpoint, rec int64) (int, error) {
	if h, ok := m.seen[e]; ok {
		return h, nil
	}
	var h int
	if m.fixed != nil {
		var ok bool
		if h, ok = m.fixed[e]; !ok {
			return 0, fmt.Errorf("%s: record %d: endpoint %s is not in the map %s", m.capture, rec, e, m.file)
		}
	} else {
		k := len(m.seen)
		if k >= m.hosts {
			return 0, fmt.Errorf("%s: record %d: endpoint %s is the capture's endpoint number %d, but the topology has %d hosts (give --map to fold endpoints onto hosts)",
				m.capture, rec, e, k+1, m.hosts)
		}
		h = m.perm[k]
	}
	m.seen[e] = h
	m.order = append(m.order, e)
	if i, found := slices.BinarySearch(m.mapped, h); !found {
		m.mapped = slices.Insert(m.mapped, i, h)
	}
	return h, nil
}

// readHostMap reads a map file: YAML (a mapping of endpoint to host index)
// when the name ends in .yaml or .yml, else CSV-like lines "endpoint,host"
// (comma or blanks between; blank lines and # comments skipped). Errors
// name the file and the line.
func readHostMap(path string, hosts int) (map[endpoint]int, error) {
	raw, err := inputfile.ReadFile(path, inputfile.ConfigLimit)
	if err != nil {
		return nil, fmt.Errorf("replay.map: %w", err)
	}
	out := map[endpoint]int{}
	lineOf := map[endpoint]int{}
	add := func(line int, key, val string) error {
		e, err := parseEndpoint(strings.TrimSpace(key))
		if err != nil {
			return fmt.Errorf("%s:%d: %v", path, line, err)
		}
		h, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("%s:%d: host %q is not an integer", path, line, strings.TrimSpace(val))
		}
		if h < 0 || h >= hosts {
			return fmt.Errorf("%s:%d: host %d out of range (the topology has hosts 0..%d)", path, line, h, hosts-1)
		}
		if l, dup := lineOf[e]; dup {
			return fmt.Errorf("%s:%d: endpoint %s is already mapped on line %d", path, line, e, l)
		}
		out[e], lineOf[e] = h, line
		return nil
	}
	lower := strings.ToLower(path)
	if strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml") {
		var doc yaml.Node
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if len(doc.Content) == 0 {
			return nil, fmt.Errorf("%s: empty map", path)
		}
		n := doc.Content[0]
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: want a mapping of endpoint (MAC or IP) to host index", path, n.Line)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s:%d: want endpoint: host", path, k.Line)
			}
			if err := add(k.Line, k.Value, v.Value); err != nil {
				return nil, err
			}
		}
	} else {
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for line := 1; sc.Scan(); line++ {
			t := sc.Text()
			if i := strings.IndexByte(t, '#'); i >= 0 {
				t = t[:i]
			}
			t = strings.TrimSpace(t)
			if t == "" {
				continue
			}
			f := strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == ';' })
			if len(f) != 2 {
				return nil, fmt.Errorf("%s:%d: want \"endpoint,host\" (a MAC or IP address and a host index), got %q", path, line, t)
			}
			if err := add(line, f[0], f[1]); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: the map names no endpoint", path)
	}
	return out, nil
}

// frameRoute is where one frame goes.
type frameRoute struct {
	src   int
	dst   int  // unicast destination host
	group bool // broadcast or multicast: every other mapped host
	local bool // unicast to an endpoint on its own host
	skip  bool // no endpoint could be read (non-IP frame mapped by IP)
}

// route finds the source and destination hosts of a frame.
func (m *hostMap) route(p *pcap.Packet, by string) (frameRoute, error) {
	var src, dst endpoint
	var group bool
	macs := p.HasSrcMAC && p.HasDstMAC
	switch {
	case by == MapByMAC && !macs:
		return frameRoute{}, fmt.Errorf("%s: record %d: link type %s carries no destination MAC; map by ip instead", m.capture, p.Record, pcap.LinkName(p.LinkType))
	case by == MapByMAC || (by != MapByIP && macs):
		src, dst = endpoint{mac: p.SrcMAC}, endpoint{mac: p.DstMAC}
		group = ether.Classify(ether.MAC(p.DstMAC)) != ether.Unicast
	case p.IPVersion != 0:
		src, dst = endpoint{ip: p.SrcIP.Unmap()}, endpoint{ip: p.DstIP.Unmap()}
		// Subnet-directed broadcasts are unicast here: the capture does
		// not carry the netmask.
		group = p.DstIP.IsMulticast() || p.DstIP == netip.AddrFrom4([4]byte{255, 255, 255, 255})
	default:
		return frameRoute{skip: true}, nil
	}
	var rt frameRoute
	var err error
	if rt.src, err = m.host(src, p.Record); err != nil {
		return rt, err
	}
	if group {
		rt.group = true
		return rt, nil
	}
	if rt.dst, err = m.host(dst, p.Record); err != nil {
		return rt, err
	}
	rt.local = rt.dst == rt.src
	return rt, nil
}

// flowKey names a one-way flow of a capture: protocol, addresses and ports
// for IP, MACs and EtherType otherwise.
type flowKey struct {
	proto            uint8
	src, dst         netip.Addr
	sport, dport     uint16
	smac, dmac       pcap.MAC
	etype            uint16
	ipv              uint8
	dstHost, srcHost int32
}

func keyOf(p *pcap.Packet) flowKey {
	if p.IPVersion != 0 {
		k := flowKey{proto: uint8(p.Proto), src: p.SrcIP, dst: p.DstIP, ipv: p.IPVersion}
		if p.HasPorts {
			k.sport, k.dport = p.SrcPort, p.DstPort
		}
		return k
	}
	return flowKey{smac: p.SrcMAC, dmac: p.DstMAC, etype: uint16(p.EtherType)}
}

func (k flowKey) String() string {
	var s string
	switch {
	case k.ipv != 0 && (k.sport != 0 || k.dport != 0):
		s = fmt.Sprintf("%s %s > %s", protoName(k.proto), netip.AddrPortFrom(k.src, k.sport), netip.AddrPortFrom(k.dst, k.dport))
	case k.ipv != 0:
		s = fmt.Sprintf("%s %s > %s", protoName(k.proto), k.src, k.dst)
	default:
		s = fmt.Sprintf("ethertype 0x%04x %s > %s", k.etype, k.smac, k.dmac)
	}
	return fmt.Sprintf("%s (host %d > host %d)", s, k.srcHost, k.dstHost)
}

func protoName(p uint8) string {
	switch p {
	case 6:
		return "TCP"
	case 17:
		return "UDP"
	case 1:
		return "ICMP"
	case 58:
		return "ICMPv6"
	}
	return fmt.Sprintf("IP proto %d", p)
}

// Per-flow order metering bounds (memory: a meter per stream).
const (
	captureMeteredFlows = 1024
	captureFlowWindow   = 512
	captureTopFlows     = 16
)

// flowStream is one flow towards one destination host: its frames are
// numbered at issue and observed at delivery to the host.
type flowStream struct {
	key    flowKey
	next   uint64
	frames uint64
	bytes  int64
	meter  *reorder.OrderMeter
	// Its packets are numbered too (pktNext), and observed as they reach
	// the destination NIC, before any rearrangement.
	pktNext uint64
	before  *reorder.OrderMeter
}

// frameRef is one frame in flight: the copies still to deliver, and its
// captured bytes when a pcapng output wants them.
type frameRef struct {
	record int64
	orig   int
	data   []byte
	link   uint16
	issue  des.Time
	refs   int
}

// frameCopy is one message of a frame (one per destination host).
type frameCopy struct {
	f   *frameRef
	st  *flowStream
	seq uint64
	src int
	dst int
	// firstSeq is the host-pair sequence number the NIC gives the copy's
	// first packet; flowPkt the flow's number of that packet.
	firstSeq, flowPkt uint64
}

// captureSource reads a capture into the replayer, one frame ahead.
type captureSource struct {
	rd    *pcap.Reader
	hm    *hostMap
	mapBy string
	win   captureWindow
	keep  bool // keep frame bytes (pcapng output)

	// look-ahead
	pkt   pcap.Packet
	data  []byte
	route frameRoute

	streams   map[flowKey]*flowStream
	pairSeq   map[uint64]uint64 // packets sent per host pair: the NIC's next sequence number
	mtu       int64
	metered   int
	unmetered uint64

	refs   freeList[frameRef]
	copies freeList[frameCopy]

	info CaptureInfo
}

// captureWindow applies From, To and Limit to packets with the rules
// window applies to block records.
type captureWindow struct{ window }

func (w *captureWindow) next(rd *pcap.Reader) (*pcap.Packet, time.Duration, error) {
	for {
		if w.full() {
			return nil, 0, io.EOF
		}
		p, err := rd.Next()
		if err != nil {
			return nil, 0, err
		}
		// UnixNano is undefined outside these years; such a stamp (a
		// pcapng timestamp of 2^64-1) cannot be placed on the time line.
		if y := p.Time.Year(); y < 1678 || y > 2261 {
			return nil, 0, fmt.Errorf("%s: packet %d: timestamp %s is outside the years 1678-2261 that nanosecond times hold", rd.Name(), p.Record, p.Time.Format(time.RFC3339))
		}
		rel, take, over := w.admit(time.Duration(p.Time.UnixNano()))
		if over {
			return nil, 0, io.EOF
		}
		if take {
			return p, rel, nil
		}
	}
}

// CaptureInfo is what a capture replay adds to the summary.
type CaptureInfo struct {
	// MapBy is the endpoint mapping asked for; MapFile the map file.
	MapBy   string `json:"map_by"`
	MapFile string `json:"map_file,omitempty"`
	// Endpoints lists every endpoint with its host, in order of first
	// appearance.
	Endpoints []EndpointHost `json:"endpoints"`
	// Frames is every frame of the window; Sent those that entered the
	// fabric (the summary's requests); Local frames between endpoints on
	// one host and Unmapped frames without a usable address stay out.
	Frames   int64 `json:"frames"`
	Sent     int64 `json:"sent"`
	Local    int64 `json:"local_frames"`
	Unmapped int64 `json:"unmapped_frames"`
	// Group counts broadcast and multicast frames; Copies the messages
	// sent (one per destination host), CopiesDelivered those delivered.
	Group           int64 `json:"group_frames"`
	Copies          int64 `json:"copies"`
	CopiesDelivered int64 `json:"copies_delivered"`
	CopyBytes       int64 `json:"copy_bytes"`
	// CapturedBytes is what the file holds of the sent frames (the
	// summary's issued_bytes are their original lengths).
	CapturedBytes int64 `json:"captured_bytes"`
	// FlowOrder is RFC 4737 over frames per flow and destination host,
	// numbered at issue, observed at delivery to the host; aggregated over
	// the metered flows; TopFlows the busiest flows' own figures.
	FlowOrder FlowOrder `json:"flow_order"`
	// FlowOrderBefore is RFC 4737 over the flows' packets (a frame is
	// split at the fabric MTU) as they reach the destination NIC, before
	// any rearrangement (adaptive-inorder); resent copies are duplicates.
	FlowOrderBefore FlowOrder  `json:"flow_order_before"`
	TopFlows        []FlowInfo `json:"top_flows"`
	FlowsMetered    int        `json:"flows_metered"`
	FlowsUnmetered  int        `json:"flows_unmetered"`
	FramesUnmetered uint64     `json:"frames_unmetered"`
}

// EndpointHost is one endpoint and the host it was placed on.
type EndpointHost struct {
	Endpoint string `json:"endpoint"`
	Host     int    `json:"host"`
}

// FlowOrder is the order of frames of a flow (or of all flows, summed)
// as the destination host received them (RFC 4737 §3, §4).
type FlowOrder struct {
	Received       uint64          `json:"received"`
	Reordered      uint64          `json:"reordered"`
	ReorderedRatio float64         `json:"reordered_ratio"`
	BeyondWindow   uint64          `json:"beyond_window"`
	Extent         reorder.Summary `json:"extent"`
	LateTimeNs     float64         `json:"late_time_max_ns"`
	ByteOffset     reorder.Summary `json:"byte_offset_bytes"`
	ThreeReordered uint64          `json:"three_reordered"`
}

// FlowInfo is one flow's frames, bytes and order.
type FlowInfo struct {
	Flow        string    `json:"flow"`
	Frames      uint64    `json:"frames"`
	Bytes       int64     `json:"bytes"`
	Order       FlowOrder `json:"order"`
	OrderBefore FlowOrder `json:"order_before"`
}

func flowOrder(r reorder.OrderReport) FlowOrder {
	return FlowOrder{Received: r.Received, Reordered: r.Reordered, ReorderedRatio: r.ReorderedRatio,
		BeyondWindow: r.BeyondWindow, Extent: r.Extent, LateTimeNs: float64(r.LateTime.Max) / 1000,
		ByteOffset: r.ByteOffset, ThreeReordered: r.NReordering[2].Packets}
}

func (o *FlowOrder) add(b FlowOrder) {
	sum := func(into *reorder.Summary, s reorder.Summary) {
		if s.Count == 0 {
			return
		}
		tot := into.Count + s.Count
		into.Mean = (into.Mean*float64(into.Count) + s.Mean*float64(s.Count)) / float64(tot)
		into.Count, into.Max = tot, max(into.Max, s.Max)
	}
	o.Received += b.Received
	o.Reordered += b.Reordered
	o.BeyondWindow += b.BeyondWindow
	o.ThreeReordered += b.ThreeReordered
	sum(&o.Extent, b.Extent)
	sum(&o.ByteOffset, b.ByteOffset)
	o.LateTimeNs = max(o.LateTimeNs, b.LateTimeNs)
	if o.Received > 0 {
		o.ReorderedRatio = float64(o.Reordered) / float64(o.Received)
	}
}

// captureScan is what the pre-scan of a capture finds.
type captureScan struct {
	TraceScan
	hm     *hostMap
	format tracefmt.Format
	link   uint16 // link type of the first frame
	sent   int64
}

// scanCapture reads the capture once: counts the window's frames and
// those that will enter the fabric, measures the span and places every
// endpoint, so that a capture with more endpoints than hosts (or one the
// map file misses) is refused before the run.
func (c ReplaySimConfig) scanCapture(hosts int) (captureScan, error) {
	r := c.Replay
	hm, err := newHostMap(hosts, c.Run.Seed, r.Map)
	if err != nil {
		return captureScan{}, err
	}
	hm.capture = r.Trace
	rd, err := pcap.Open(r.Trace)
	if err != nil {
		return captureScan{}, fmt.Errorf("replay.trace: %w", err)
	}
	defer rd.Close()
	sc := captureScan{hm: hm, format: rd.Format()}
	w := captureWindow{window{cfg: r}}
	var group int64
	for {
		p, rel, err := w.next(rd)
		if err == io.EOF {
			break
		}
		if err != nil {
			return sc, err
		}
		if sc.Records == 0 {
			sc.link = uint16(p.LinkType)
		}
		sc.Records++
		sc.Span = max(sc.Span, rel)
		rt, err := hm.route(p, mapBy(r.MapBy))
		if err != nil {
			return sc, err
		}
		switch {
		case rt.group:
			group++
		case !rt.skip && !rt.local:
			sc.sent++
		}
	}
	// A broadcast goes to every other host that holds an endpoint of the
	// whole capture (the replay knows them all from this scan).
	if len(hm.mapped) > 1 {
		sc.sent += group
	}
	sc.Skipped = w.skipped
	return sc, nil
}

func mapBy(s string) string {
	if s == "" {
		return MapByAuto
	}
	return s
}

func newCaptureSource(cfg ReplaySimConfig, sc captureScan, keep bool) (*captureSource, error) {
	rd, err := pcap.Open(cfg.Replay.Trace)
	if err != nil {
		return nil, fmt.Errorf("replay.trace: %w", err)
	}
	c := &captureSource{rd: rd, hm: sc.hm, mapBy: mapBy(cfg.Replay.MapBy), win: captureWindow{window{cfg: cfg.Replay}},
		keep: keep, streams: map[flowKey]*flowStream{}, pairSeq: map[uint64]uint64{}, mtu: int64(cfg.NIC.MTU)}
	c.info.MapBy, c.info.MapFile = c.mapBy, cfg.Replay.Map
	return c, nil
}

// next reads the window's next frame into the look-ahead.
func (c *captureSource) next() (time.Duration, error) {
	p, rel, err := c.win.next(c.rd)
	if err != nil {
		return 0, err
	}
	c.pkt = *p
	c.data = append(c.data[:0], p.Data...)
	c.pkt.Data = c.data
	c.route, err = c.hm.route(p, c.mapBy)
	return rel, err
}

func (c *captureSource) stream(k flowKey, src, dst int) *flowStream {
	k.srcHost, k.dstHost = int32(src), int32(dst)
	st, ok := c.streams[k]
	if ok {
		return st
	}
	if c.metered >= captureMeteredFlows {
		c.streams[k] = nil
		c.unmetered++
		return nil
	}
	st = &flowStream{key: k}
	st.meter, _ = reorder.NewOrderMeter(reorder.MeterConfig{Stream: k.String() + " frames at host delivery",
		TimeUnit: "ps", HistoryWindow: captureFlowWindow})
	st.before, _ = reorder.NewOrderMeter(reorder.MeterConfig{Stream: k.String() + " packets at NIC arrival",
		TimeUnit: "ps", HistoryWindow: captureFlowWindow})
	c.streams[k] = st
	c.metered++
	return st
}

// issueCapture sends the look-ahead frame: one message per destination.
func (r *replayer) issueCapture(now des.Time) {
	c := r.cap
	p := &c.pkt
	rt := c.route
	c.info.Frames++
	switch {
	case rt.skip:
		c.info.Unmapped++
		return
	case rt.local:
		c.info.Local++
		return
	case rt.group && len(c.hm.mapped) < 2:
		c.info.Local++
		return
	}
	if rt.group {
		c.info.Group++
	}
	f := c.refs.get()
	f.record, f.orig, f.issue, f.link = p.Record, p.OrigLen, now, uint16(p.LinkType)
	if c.keep {
		f.data = append(f.data[:0], p.Data...)
	}
	key := keyOf(p)
	send := func(dst int) {
		st := c.stream(key, rt.src, dst)
		cp := c.copies.get()
		cp.f, cp.st, cp.src, cp.dst = f, st, rt.src, dst
		// The NIC numbers packets per host pair from 0 in send order
		// (nic.Network.Send), and splits the frame at the MTU.
		npk := max(1, (int64(p.OrigLen)+c.mtu-1)/c.mtu)
		pk := uint64(rt.src)<<32 | uint64(uint32(dst))
		cp.firstSeq = c.pairSeq[pk]
		c.pairSeq[pk] += uint64(npk)
		if st != nil {
			cp.seq = st.next
			st.next++
			cp.flowPkt = st.pktNext
			st.pktNext += uint64(npk)
			st.frames++
			st.bytes += int64(p.OrigLen)
		} else {
			c.info.FramesUnmetered++
		}
		f.refs++
		c.info.Copies++
		c.info.CopyBytes += int64(p.OrigLen)
		m := r.nw.NewMessage()
		m.Src, m.Dst, m.Bytes, m.Gen, m.Tag, m.Done = rt.src, dst, int64(p.OrigLen), now, cp, r.doneFn
		r.nw.Send(m)
	}
	if rt.group {
		// As the daemon replicates a broadcast or multicast frame to every
		// other TAP: here to every other host holding an endpoint.
		for _, h := range c.hm.mapped {
			if h != rt.src {
				send(h)
			}
		}
	} else {
		send(rt.dst)
	}
	c.info.Sent++
	c.info.CapturedBytes += int64(p.CapLen)
	r.issued++
	r.issuedBytes += int64(p.OrigLen)
	r.addOutstanding(now)
	r.count(&r.binIssued, now)
}

// arrive observes a data packet of a frame reaching the destination NIC,
// numbered within its flow.
func (c *captureSource) arrive(p *fabric.Packet, at des.Time) {
	m, ok := p.Ref.(*nic.Message)
	if !ok {
		return
	}
	cp, ok := m.Tag.(*frameCopy)
	if !ok || cp.st == nil || p.Seq < cp.firstSeq {
		return
	}
	cp.st.before.Observe(cp.flowPkt+(p.Seq-cp.firstSeq), int(p.Payload), int64(at))
}

// captureDone is a frame copy's delivery to its host.
func (r *replayer) captureDone(m *nic.Message, cp *frameCopy, at des.Time) {
	c := r.cap
	f := cp.f
	c.info.CopiesDelivered++
	reordered := false
	if cp.st != nil && cp.st.meter != nil {
		reordered = cp.st.meter.Observe(cp.seq, f.orig, int64(at)).Reordered
	}
	lat := int64(at - f.issue)
	r.lat.Add(lat)
	if r.out != nil {
		r.out.frame(m, at, f.data, f.orig, f.link, reordered)
	}
	c.freeCopy(cp)
	f.refs--
	if f.refs > 0 {
		return
	}
	r.completed++
	r.outstanding--
	r.lastDone = max(r.lastDone, at)
	r.count(&r.binCompleted, at)
	c.freeRef(f)
	if r.progress != nil {
		r.progress(r.completed, r.total, at-r.liveBase, r.eng.Fired())
	}
	r.checkFinished()
}

// freeRef recycles a frame, keeping its data buffer for the next one.
func (c *captureSource) freeRef(f *frameRef) {
	f.refs = 0
	f.data = f.data[:0]
	c.refs.put(f)
}

func (c *captureSource) freeCopy(cp *frameCopy) {
	*cp = frameCopy{}
	c.copies.put(cp)
}

// summary fills the capture part of the replay summary.
func (c *captureSource) summary() *CaptureInfo {
	info := c.info
	for _, e := range c.hm.order {
		info.Endpoints = append(info.Endpoints, EndpointHost{Endpoint: e.String(), Host: c.hm.seen[e]})
	}
	flows := make([]*flowStream, 0, len(c.streams))
	for _, st := range c.streams {
		if st != nil {
			flows = append(flows, st)
		}
	}
	slices.SortFunc(flows, func(a, b *flowStream) int {
		if a.frames != b.frames {
			if a.frames > b.frames {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key.String(), b.key.String())
	})
	info.TopFlows = []FlowInfo{}
	for i, st := range flows {
		o, b := flowOrder(st.meter.Report()), flowOrder(st.before.Report())
		info.FlowOrder.add(o)
		info.FlowOrderBefore.add(b)
		if i < captureTopFlows {
			info.TopFlows = append(info.TopFlows, FlowInfo{Flow: st.key.String(), Frames: st.frames, Bytes: st.bytes, Order: o, OrderBefore: b})
		}
	}
	info.FlowsMetered, info.FlowsUnmetered = c.metered, int(c.unmetered)
	return &info
}
