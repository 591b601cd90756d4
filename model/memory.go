package model

import (
	"bufio"
	"bytes"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/nic"
)

// Memory estimate constants, calibrated against the peak resident set of
// every preset (docs/performance.md, "Memory estimate"; the test
// TestMemoryEstimateMatchesPresets in cmd/fabemu measures them).
const (
	memBaseline     = 18 << 20                       // Go runtime, the binary's data, cobra and the report code (a two-host run)
	memPerSwitch    = 1200                           // switch, its allocator state and routing entries
	memPerPort      = 1400                           // in and out port, link, credits, pending events
	memPerQueue     = fabric.QueueBytes              // one input queue (packets are linked through it)
	memPerPacket    = int64(fabric.PacketBytes) + 96 // a packet, its message's share and its queue slots
	memPerMeter     = 2048                           // one stream's order meters besides the history window
	memPerMeterSlot = 37                             // a history record, its byte count and its bit
	memPerHost      = 6 << 10                        // NIC, its queues, metrics and connection rings
	memPerPeer      = 16                             // dense sequence tables: two uint64 per peer and host
	memDenseHosts   = 512                            // nic keeps dense per-peer tables up to this many hosts
	memDistEntry    = 6                              // up to three uint16 all-pairs distance tables
)

// Workload is what a run's workload tells the memory estimate.
type Workload struct {
	// PacketsPerHost is the most packets one host generates in the run
	// (synth.PacketsBound); negative when not known before the run.
	PacketsPerHost float64
	// PacketBytes is the mean wire size of the workload's packets, which
	// sets how many fit in the switch buffers; 0: the largest packet.
	PacketBytes int
	// Bytes is the workload's own state (a trace's records).
	Bytes int64
	// Requests is the most requests a trace replay keeps outstanding at
	// once (its run.max_outstanding_requests, or its record limit), each
	// costing RequestBytes; 0 when not bounded or not a replay.
	Requests, RequestBytes int64
}

// MemoryEstimate is the peak memory a run of a Model is expected to need,
// with the topology counts it was computed from.
type MemoryEstimate struct {
	Bytes  int64
	Counts topo.Counts
	Parts  []MemoryPart
	// Requests and RequestBytes are a replay's outstanding requests and
	// their share of Bytes (Workload.Requests).
	Requests, RequestBytes int64
}

// MemoryPart is one term of an estimate.
type MemoryPart struct {
	What  string
	Bytes int64
}

// EstimateMemory estimates the peak memory of one run of m from its
// configuration alone, before anything is built: switches, ports and the
// queues per input of the switch architecture, packets the buffers can
// hold, per-host and per-peer NIC state, routing tables, the event queue
// and the Go runtime baseline. extra is added for a workload's own state
// (a trace's records).
func EstimateMemory(m *Model, extra int64) (MemoryEstimate, error) {
	return EstimateRun(m, Workload{PacketsPerHost: -1, Bytes: extra})
}

// EstimateRun is EstimateMemory knowing the workload: the packets alive
// at once are at most those the run generates (w.PacketsPerHost, when known) and
// at most what the switch buffers hold. Packets waiting at the sources
// beyond that, which grow without bound when the offered load exceeds
// what the fabric accepts, are not in the estimate: the run bounds them
// itself (run.max_source_packets) and stops with an error past the bound.
func EstimateRun(m *Model, w Workload) (MemoryEstimate, error) {
	extra := w.Bytes
	c, err := topo.Count(m.Topology)
	if err != nil {
		return MemoryEstimate{}, err
	}
	e := MemoryEstimate{Counts: c}
	add := func(what string, n int64) {
		if n < 0 || n > 1<<60 {
			n = 1 << 60
		}
		e.Parts = append(e.Parts, MemoryPart{what, n})
		e.Bytes = min(e.Bytes+n, 1<<62)
	}
	maxPacket := m.NIC.MaxPacket()
	portsPerSwitch := int(min(c.Ports/max(c.Switches, 1), 1<<30))
	hosts := int(min(c.Hosts, 1<<40))
	q := int64(fabric.QueuesPerInput(m.Fabric, lanes(m), maxPacket, portsPerSwitch, hosts))
	add("runtime baseline", memBaseline)
	add("switches", mul(c.Switches, memPerSwitch))
	add("ports and events", mul(c.Ports, memPerPort))
	add("input queues", mul(mul(c.Ports, q), memPerQueue))
	if b := fabric.PortStateBytes(m.Fabric, lanes(m), portsPerSwitch, hosts); b > 0 {
		add("switch port state", mul(c.Ports, b))
	}
	if n := int64(m.NIC.InjectionQueues.Count); n > 1 {
		// every queue but the first has a port of its own at the switch
		// and at the host (fabric inject_ports.go), with their queues
		extra := mul(c.Hosts, 2*(n-1))
		add("injection ports", mul(extra, memPerPort+q*memPerQueue+fabric.PortStateBytes(m.Fabric, lanes(m), portsPerSwitch, hosts)))
	}
	if m.Fabric.Deadlock.Active() {
		ports := c.Ports + mul(c.Hosts, 2*int64(max(m.NIC.InjectionQueues.Count-1, 0)))
		add("deadlock detection", mul(ports, fabric.DeadlockPortBytes(m.Fabric, lanes(m), int(q))))
	}
	// Packets alive at once: at most every switch buffer full of largest
	// packets (full of the smallest would bound it, but packets are
	// allocated as they are generated and a run never fills every buffer
	// with them), and at most every packet the run generates. Each costs
	// its state, its message's and its slots in the queues it passes.
	// Output memories: none for iq and pciq-K, one per row for hc.
	buf := int64(m.Fabric.InputBuffer) + int64(fabric.OutputMemories(m.Fabric))*int64(m.Fabric.OutputBuffer)
	size := maxPacket
	if w.PacketBytes > 0 {
		size = min(size, w.PacketBytes)
	}
	packets := mul(c.Ports, buf) / int64(max(size, 1))
	if m.Fabric.Wormhole() {
		// a wormhole lane holds (part of) one packet at most
		packets = mul(c.Ports, int64(lanes(m)))
	}
	generated := int64(-1)
	if w.PacketsPerHost >= 0 {
		generated = int64(min(w.PacketsPerHost*float64(c.Hosts), 1<<60))
		packets = min(packets, generated)
	}
	add("packets in flight", mul(packets, memPerPacket))
	if st, held := fabric.HostStateBytes(m.Fabric, size); st > 0 {
		// recn-iq's SAQs at the NICs and the packets their memory holds
		// (taken from the NICs' queues, so not bounded as the sources are).
		add("NIC SAQ state", mul(c.Hosts, st))
		held = mul(c.Hosts, held)
		if generated >= 0 {
			held = min(held, generated)
		}
		add("packets in NIC SAQs", mul(held, memPerPacket))
	}
	add("hosts", mul(c.Hosts, memPerHost))
	if n, b := orderMeterBytes(m, c.Hosts, generated); n > 0 {
		// Adaptive delivery meters the order of each stream that delivers
		// a packet (nic/order.go), up to nic.delivery.order_streams.
		add("order meters", mul(n, b))
	}
	if c.Hosts <= memDenseHosts {
		add("per-peer state", mul(mul(c.Hosts, c.Hosts), memPerPeer))
	}
	if !c.Cube {
		add("routing tables", mul(mul(c.Switches, c.Switches), memDistEntry))
	}
	add("workload", extra)
	if w.Requests > 0 {
		e.Requests, e.RequestBytes = w.Requests, mul(w.Requests, w.RequestBytes)
		add("outstanding requests", e.RequestBytes)
	}
	return e, nil
}

// lanes is the number of virtual lanes the router of m gives every link,
// from the configuration (route.New builds it): one escape lane, two for
// dimension order on a torus (the dateline's), plus the adaptive lanes of
// adaptive routing.
func lanes(m *Model) int {
	n := 1
	if esc := m.Routing.Escape; m.Topology.Kind == topo.KindTorus && (esc == "dor" || esc == "auto" || esc == "") {
		n = 2
	} else if esc == route.EscapeNone {
		n = 0 // TFAR: every lane is adaptive
	}
	if m.Routing.Mode == route.Adaptive {
		n += max(m.Routing.AdaptiveVLs, 0)
	}
	return n
}

// orderMeterBytes is how many stream order meters a run of m keeps at
// most (the first streams to deliver a packet, up to
// nic.delivery.order_streams, at most one per host pair and per packet)
// and the bytes of one: an RFC 4737 history window of records
// (reorder.NewOrderMeter), rounded up to a power of two.
func orderMeterBytes(m *Model, hosts, packets int64) (n, bytes int64) {
	d := m.NIC.Delivery
	if mode, _ := d.Effective(m.Routing.Mode); mode == nic.DeliveryDeterministic {
		return 0, 0
	}
	streams := int64(d.OrderStreams)
	switch {
	case streams < 0:
		return 0, 0
	case streams == 0:
		streams = 1024
	}
	streams = min(streams, mul(hosts, max(hosts-1, 0)))
	if packets >= 0 {
		streams = min(streams, packets)
	}
	window := int64(d.OrderWindow)
	if window <= 0 {
		window = 256
	}
	window = int64(1) << bits.Len64(uint64(window-1))
	return streams, window*memPerMeterSlot + memPerMeter
}

func mul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > (1<<60)/b {
		return 1 << 60
	}
	return a * b
}

// Culprit names the setting that makes an estimate large, for the error
// that refuses it.
func (e MemoryEstimate) Culprit(m *Model) string {
	t := m.Topology
	switch t.Kind {
	case topo.KindTorus, topo.KindMesh:
		return fmt.Sprintf("topology.k=%s", strings.ReplaceAll(fmt.Sprint(t.K), " ", ","))
	case topo.KindMIN:
		return fmt.Sprintf("topology.hosts=%d", t.Hosts)
	case topo.KindIrregular:
		return fmt.Sprintf("topology.switches=%d", t.Switches)
	}
	return "topology.path=" + t.Path
}

// FormatBytes writes a byte count for people: 210 GiB, 22.9 GiB, 38 MiB.
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v < 100 && i > 0 {
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " " + units[i]
}

// AvailableMemory is the memory a run may use: the smallest of
// MemAvailable from /proc/meminfo and the process's own limits
// (ProcessLimit). It returns 0 when none can be read (no check is then
// made).
func AvailableMemory() int64 {
	avail, _ := AvailableMemoryWhy()
	return avail
}

// AvailableMemoryWhy is AvailableMemory with the name of the limit that
// sets it ("available", "RLIMIT_AS", "cgroup memory.max", ...).
func AvailableMemoryWhy() (int64, string) {
	avail, why := procKB("/proc/meminfo", "MemAvailable:"), "available"
	if lim, what := ProcessLimit(); lim > 0 && (avail == 0 || lim < avail) {
		avail, why = lim, what
	}
	return avail, why
}

// ProcessLimit is the memory this process may still take by its own
// limits, and which one binds: RLIMIT_AS less the address space mapped
// (VmSize), RLIMIT_DATA less the data mapped (VmData), and for its cgroup
// and every ancestor, memory.max (v2) or memory.limit_in_bytes (v1) less
// the usage. A Slurm task with --mem or a Kubernetes pod with a memory
// limit is such a cgroup; ulimit -v sets RLIMIT_AS. 0 when none is set.
func ProcessLimit() (int64, string) {
	best, why := int64(0), ""
	take := func(v int64, what string) {
		if v > 0 && (best == 0 || v < best) {
			best, why = v, what
		}
	}
	for _, r := range []struct {
		res  int
		name string
		key  string
	}{{syscall.RLIMIT_AS, "RLIMIT_AS", "VmSize:"}, {syscall.RLIMIT_DATA, "RLIMIT_DATA", "VmData:"}} {
		var rl syscall.Rlimit
		if err := syscall.Getrlimit(r.res, &rl); err != nil || rl.Cur == ^uint64(0) || rl.Cur >= 1<<62 {
			continue
		}
		take(max(int64(rl.Cur)-procKB("/proc/self/status", r.key), 1), r.name)
	}
	if v, what := cgroupFree(); v > 0 {
		take(v, what)
	}
	return best, why
}

// SetRuntimeLimit sets the Go runtime's soft memory limit from the
// process's own limits (ProcessLimit plus what the process holds now),
// so that the collector works harder before a cgroup or rlimit kills the
// process. GOMEMLIMIT, when set, is left alone. It returns the limit set
// (0: none).
func SetRuntimeLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	lim, _ := ProcessLimit()
	if lim <= 0 {
		return 0
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// The soft limit covers all memory the runtime maps; keep a tenth
	// in reserve for what it does not control (stacks of threads, C).
	total := (lim + int64(ms.Sys)) / 10 * 9
	debug.SetMemoryLimit(total)
	return total
}

// PeakRSS is the peak resident set of this process so far (VmHWM of
// /proc/self/status), in bytes; 0 where it cannot be read. It is the
// process's own address space, unlike getrusage's ru_maxrss, which keeps
// the parent's high-water mark across fork and exec.
func PeakRSS() int64 { return procKB("/proc/self/status", "VmHWM:") }

// procKB reads the "key value kB" line of a /proc file, in bytes; 0 when
// the file or the line is missing.
func procKB(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == key {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupFree is the memory left under the tightest memory limit of this
// process's cgroup and its ancestors (v2 memory.max less memory.current,
// v1 memory.limit_in_bytes less memory.usage_in_bytes), and which file
// set it; 0 when no limit is set.
func cgroupFree() (int64, string) {
	read := func(p string) int64 {
		b, err := os.ReadFile(p)
		if err != nil {
			return 0
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0 // "max": no limit
		}
		return v
	}
	best, why := int64(0), ""
	level := func(dir, limit, usage string) {
		lim := read(filepath.Join(dir, limit))
		if lim <= 0 || lim >= 1<<60 {
			return
		}
		free := max(lim-read(filepath.Join(dir, usage)), 1)
		if best == 0 || free < best {
			best, why = free, "cgroup "+limit
		}
	}
	// Walk from the process's own cgroup up to the root of the mounted
	// hierarchy: a limit anywhere above applies.
	walk := func(root, path, limit, usage string) {
		for p := filepath.Clean("/" + path); ; p = filepath.Dir(p) {
			level(filepath.Join(root, p), limit, usage)
			if p == "/" {
				return
			}
		}
	}
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			walk("/sys/fs/cgroup", f[2], "memory.max", "memory.current")
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			walk("/sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes", "memory.usage_in_bytes")
		}
	}
	// Inside a container the process's path may not exist under the
	// mount (cgroup namespace); the mount's root is then its cgroup.
	level("/sys/fs/cgroup", "memory.max", "memory.current")
	level("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes")
	return best, why
}

// CheckMemory refuses a run whose estimate (times jobs run at once)
// exceeds the limit: maxMemory if positive, else the available memory.
func CheckMemory(m *Model, e MemoryEstimate, jobs int, maxMemory int64) error {
	need := mul(e.Bytes, int64(max(jobs, 1)))
	limit, what := maxMemory, "--max-memory"
	if limit <= 0 {
		limit, what = AvailableMemoryWhy()
		if limit <= 0 {
			return nil
		}
		if what != "available" {
			what = "available under " + what
		}
	}
	if need <= limit {
		return nil
	}
	runs := ""
	if jobs > 1 {
		runs = fmt.Sprintf(" x %d jobs", jobs)
	}
	if e.RequestBytes*2 > e.Bytes {
		return fmt.Errorf("run.max_outstanding_requests=%d: a replay keeping that many requests outstanding%s needs about %s, %s %s: lower run.max_outstanding_requests (the replay stops with an error past it) or raise --max-memory",
			e.Requests, runs, FormatBytes(need), FormatBytes(limit), what)
	}
	return fmt.Errorf("%s: %s switches and %s hosts%s need about %s, %s %s: use a smaller topology, fewer --jobs or --max-memory to override",
		e.Culprit(m), groupDigits(e.Counts.Switches), groupDigits(e.Counts.Hosts), runs, FormatBytes(need), FormatBytes(limit), what)
}

func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ParseSize reads a --max-memory value: bytes with an optional K, M, G or
// T suffix (powers of 1024, "iB"/"B" accepted).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "B"), "i")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || v*float64(mult) > 1<<62 || v*float64(mult) < 1 {
		return 0, fmt.Errorf("%q: expected a positive size such as 8GiB or 512MiB", s)
	}
	return int64(v * float64(mult)), nil
}

// SourcePacketBudget is the automatic run.max_source_packets of a run of m
// (run.max_source_packets=0): the packets half the memory left after the
// run's estimate holds, the other half left to the collector's headroom
// and to the rest of the machine. It returns 0 (no bound) when the
// available memory cannot be read.
func SourcePacketBudget(m *Model, w Workload) int64 {
	avail := AvailableMemory()
	if avail <= 0 {
		return 0
	}
	e, err := EstimateRun(m, w)
	if err != nil {
		return 0
	}
	return max((avail-e.Bytes)/2/memPerPacket, 1)
}
