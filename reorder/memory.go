package reorder

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MemoryKind says how a destination NIC manages its rearrangement memory
// (paper 004 §3.2, last paragraph).
type MemoryKind uint8

const (
	// Static gives every connection a fixed buffer of MemorySpec.PerConn bytes.
	Static MemoryKind = iota + 1
	// Dynamic shares one memory of MemorySpec.Pool bytes among all
	// connections of the NIC, each connection holding at most MemorySpec.Cap bytes.
	Dynamic
	// Unlimited never rejects a packet; it exists to measure how much buffer
	// a workload needs (paper 004 §4.2, "buffer requirements").
	Unlimited
)

func (k MemoryKind) String() string {
	switch k {
	case Static:
		return "static"
	case Dynamic:
		return "dynamic"
	case Unlimited:
		return "unlimited"
	}
	return fmt.Sprintf("MemoryKind(%d)", uint8(k))
}

// MarshalText writes the kind's name ("static", "dynamic", "unlimited").
func (k MemoryKind) MarshalText() ([]byte, error) {
	if k < Static || k > Unlimited {
		return nil, fmt.Errorf("reorder: memory kind %d is not static, dynamic or unlimited", uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a kind's name.
func (k *MemoryKind) UnmarshalText(b []byte) error {
	for _, c := range []MemoryKind{Static, Dynamic, Unlimited} {
		if strings.EqualFold(string(b), c.String()) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("reorder: memory kind %q: want static, dynamic or unlimited", b)
}

// MemorySpec describes the rearrangement memory of one destination NIC.
// All sizes are bytes. In JSON and YAML it is written as its String form
// ("dynamic:256KiB,cap=128KiB"), through MarshalText and UnmarshalText.
type MemorySpec struct {
	Kind MemoryKind `json:"kind"`
	// PerConn is the fixed buffer per connection (Static only).
	PerConn int64 `json:"per_conn_bytes,omitempty"`
	// Pool is the memory shared by every connection of the NIC (Dynamic only).
	Pool int64 `json:"pool_bytes,omitempty"`
	// Cap is the most one connection may hold of the pool (Dynamic only).
	Cap int64 `json:"cap_bytes,omitempty"`
}

// Presets from paper 004 §4.3–§4.4 (Tables 1 and 2).
var (
	Static2KiB     = MemorySpec{Kind: Static, PerConn: 2 << 10}
	Static32KiB    = MemorySpec{Kind: Static, PerConn: 32 << 10}
	Dynamic256KiB  = MemorySpec{Kind: Dynamic, Pool: 256 << 10, Cap: 128 << 10}
	Dynamic4MiB    = MemorySpec{Kind: Dynamic, Pool: 4 << 20, Cap: 1 << 20}
	UnlimitedSpace = MemorySpec{Kind: Unlimited}
)

// Validate checks the spec's fields for its kind.
func (s MemorySpec) Validate() error {
	switch s.Kind {
	case Static:
		if s.PerConn < 0 {
			return fmt.Errorf("reorder: static memory: negative buffer size %d bytes", s.PerConn)
		}
		if s.Pool != 0 || s.Cap != 0 {
			return errors.New("reorder: static memory: pool and cap apply only to dynamic memory")
		}
	case Dynamic:
		if s.Pool < 0 || s.Cap < 0 {
			return fmt.Errorf("reorder: dynamic memory: negative size (pool %d bytes, cap %d bytes)", s.Pool, s.Cap)
		}
		if s.Cap > s.Pool {
			return fmt.Errorf("reorder: dynamic memory: per-connection cap %s exceeds the pool %s", FormatBytes(s.Cap), FormatBytes(s.Pool))
		}
		if s.PerConn != 0 {
			return errors.New("reorder: dynamic memory: per-connection buffer applies only to static memory (use cap=)")
		}
	case Unlimited:
		if s.PerConn != 0 || s.Pool != 0 || s.Cap != 0 {
			return errors.New("reorder: unlimited memory takes no sizes")
		}
	default:
		return fmt.Errorf("reorder: memory kind %d is not static, dynamic or unlimited", uint8(s.Kind))
	}
	return nil
}

// String renders the spec in the syntax ParseMemorySpec reads, e.g.
// "dynamic:256KiB,cap=128KiB"; ParseMemorySpec(s.String()) == s for valid specs.
func (s MemorySpec) String() string {
	switch s.Kind {
	case Static:
		return "static:" + FormatBytes(s.PerConn)
	case Dynamic:
		return "dynamic:" + FormatBytes(s.Pool) + ",cap=" + FormatBytes(s.Cap)
	case Unlimited:
		return "unlimited"
	}
	return fmt.Sprintf("MemorySpec{Kind:%d PerConn:%d Pool:%d Cap:%d}", uint8(s.Kind), s.PerConn, s.Pool, s.Cap)
}

// MarshalText writes the spec in ParseMemorySpec syntax.
func (s MemorySpec) MarshalText() ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return []byte(s.String()), nil
}

// UnmarshalText parses the spec with ParseMemorySpec.
func (s *MemorySpec) UnmarshalText(b []byte) error {
	spec, err := ParseMemorySpec(string(b))
	if err != nil {
		return err
	}
	*s = spec
	return nil
}

// ParseMemorySpec reads a memory spec:
//
//	static:<size>                 a buffer of <size> per connection
//	dynamic:<pool>[,cap=<size>]   a shared pool, each connection capped (default cap: the pool)
//	unlimited                     never reject (measures buffer requirements)
//
// A size is a non-negative integer with an optional unit: B, K/KB/KiB,
// M/MB/MiB, G/GB/GiB (case-insensitive). KB, MB and GB are binary here,
// like KiB, MiB and GiB (1 KB = 1024 B), as in paper 004 where "2 KB" and
// "256 KB" buffers are powers of two. Examples: "static:2KiB",
// "static:32KiB", "dynamic:256KiB,cap=128KiB", "dynamic:4MiB,cap=1MiB".
func ParseMemorySpec(text string) (MemorySpec, error) {
	fail := func(format string, a ...any) (MemorySpec, error) {
		return MemorySpec{}, fmt.Errorf("reorder: memory spec %q: %s", text, fmt.Sprintf(format, a...))
	}
	kind, args, hasArgs := strings.Cut(strings.TrimSpace(text), ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	var spec MemorySpec
	switch kind {
	case "unlimited":
		if hasArgs {
			return fail("unlimited takes no size")
		}
		return MemorySpec{Kind: Unlimited}, nil
	case "static":
		if !hasArgs || strings.TrimSpace(args) == "" {
			return fail("static needs a buffer size per connection, as in static:32KiB")
		}
		if strings.Contains(args, ",") {
			return fail("static takes one size (cap= applies to dynamic memory)")
		}
		n, err := ParseBytes(args)
		if err != nil {
			return fail("%v", err)
		}
		spec = MemorySpec{Kind: Static, PerConn: n}
	case "dynamic":
		if !hasArgs || strings.TrimSpace(args) == "" {
			return fail("dynamic needs a pool size, as in dynamic:256KiB,cap=128KiB")
		}
		fields := strings.Split(args, ",")
		pool, err := ParseBytes(fields[0])
		if err != nil {
			return fail("pool: %v", err)
		}
		spec = MemorySpec{Kind: Dynamic, Pool: pool, Cap: pool}
		seenCap := false
		for _, f := range fields[1:] {
			key, val, ok := strings.Cut(f, "=")
			key = strings.ToLower(strings.TrimSpace(key))
			if !ok || key != "cap" {
				return fail("unknown option %q (the only option is cap=<size>)", strings.TrimSpace(f))
			}
			if seenCap {
				return fail("cap given twice")
			}
			seenCap = true
			if spec.Cap, err = ParseBytes(val); err != nil {
				return fail("cap: %v", err)
			}
		}
	case "":
		return fail("empty; want static:<size>, dynamic:<pool>[,cap=<size>] or unlimited")
	default:
		return fail("unknown memory kind %q; want static, dynamic or unlimited", kind)
	}
	if err := spec.Validate(); err != nil {
		return fail("%v", strings.TrimPrefix(err.Error(), "reorder: "))
	}
	return spec, nil
}

var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
}

// ParseBytes reads a size such as "2KiB", "256 KB" or "4096" (bytes).
// Units are binary (see ParseMemorySpec).
func ParseBytes(text string) (int64, error) {
	t := strings.TrimSpace(text)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		if t == "" {
			return 0, errors.New("missing size")
		}
		return 0, fmt.Errorf("size %q does not start with a number of bytes", t)
	}
	if i < len(t) && (t[i] == '.' || t[i] == ',') {
		return 0, fmt.Errorf("size %q: only whole numbers are accepted (use a smaller unit)", t)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: number out of range", t)
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	mul, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB or GiB)", t, strings.TrimSpace(t[i:]))
	}
	if n > math.MaxInt64/mul {
		return 0, fmt.Errorf("size %q: too large", t)
	}
	return n * mul, nil
}

// FormatBytes writes n with the largest binary unit that divides it exactly
// ("2KiB", "1536B"), so that ParseBytes(FormatBytes(n)) == n.
func FormatBytes(n int64) string {
	switch {
	case n != 0 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "GiB"
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	case n != 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Memory is the rearrangement memory of one destination NIC. It accounts
// the bytes stored by every Receiver created on it, enforces the spec's
// limits and keeps the NIC-wide statistics (MMS is its peak occupancy).
// Like the rest of the package it is not safe for concurrent use: the
// simulator's event loop owns it.
type Memory struct {
	spec  MemorySpec
	inUse int64
	stats NICStats
}

// NewMemory makes the memory of one NIC. The spec must be valid (as
// ParseMemorySpec returns it, or checked with Validate); NewMemory panics
// on an invalid spec because that is a programming error, not input.
func NewMemory(spec MemorySpec) *Memory {
	if err := spec.Validate(); err != nil {
		panic(err)
	}
	return &Memory{spec: spec, stats: NICStats{Memory: spec.String()}}
}

// Spec returns the spec the memory was made with.
func (m *Memory) Spec() MemorySpec { return m.spec }

// InUse is the number of bytes currently stored by all connections.
func (m *Memory) InUse() int64 { return m.inUse }

// Stats returns a snapshot of the NIC-wide statistics.
func (m *Memory) Stats() NICStats {
	s := m.stats
	s.InUseBytes = m.inUse
	return s
}

// shortfall is how many of the connection's bytes must be freed so that
// size more bytes fit, given the connection holds held bytes. It returns 0
// if the packet fits as is, and -1 if no amount of freeing by this
// connection can make it fit (the packet is larger than the per-connection
// limit, or than the pool).
func (m *Memory) shortfall(held, size int64) int64 {
	switch m.spec.Kind {
	case Static:
		if size > m.spec.PerConn {
			return -1
		}
		return max(0, held+size-m.spec.PerConn)
	case Dynamic:
		if size > m.spec.Cap {
			return -1
		}
		// Freeing this connection's bytes lowers its own occupancy and the
		// pool's by the same amount, so the larger overshoot decides.
		need := max(0, held+size-m.spec.Cap, m.inUse+size-m.spec.Pool)
		if need > held {
			return -1 // the pool is held by other connections
		}
		return need
	}
	return 0
}

func (m *Memory) take(n int64) {
	m.inUse += n
	if m.inUse > m.stats.MMSBytes {
		m.stats.MMSBytes = m.inUse
	}
}

func (m *Memory) give(n int64) { m.inUse -= n }

// NICStats are the figures of one destination NIC's rearrangement memory,
// summed over its connections.
type NICStats struct {
	// Memory is the spec in ParseMemorySpec syntax.
	Memory string `json:"memory"`
	// Connections is the number of receivers made on this memory.
	Connections int `json:"connections"`
	// InUseBytes is the memory in use now.
	InUseBytes int64 `json:"in_use_bytes"`
	// MMSBytes is the largest total memory in use at one time (paper 004 "MMS").
	MMSBytes int64 `json:"mms_bytes"`
	// MBSBytes is the largest buffer any single connection used (paper 004 "MBS").
	MBSBytes int64 `json:"mbs_bytes"`
	// Counts sums the counters of every connection on this memory.
	Counts
}
