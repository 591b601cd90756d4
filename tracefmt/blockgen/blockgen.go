// Package blockgen owns synthetic block-I/O traces for users who have no
// trace: a bursty ON/OFF arrival process, a discrete size mix, a read
// fraction, sequential runs and a Zipf skew across disks, with profiles
// ("cello99", "cello92") built from published statistics of the HP Labs
// cello traces. Generation is deterministic from a seed.
//
// The arrival process (after the guidance in the project's trace-format
// reference, §3): requests come in ON bursts whose length is geometric with
// mean BurstLen requests; inside a burst, inter-arrival times are
// exponential with mean BurstGap; between bursts the OFF gap has a
// two-phase hyperexponential distribution with balanced means and
// coefficient of variation IdleCV. The OFF mean is chosen so that the long
// run rate is Rate:
//
//	1/Rate = ((BurstLen-1)·BurstGap + OffMean) / BurstLen
//
// so OffMean = BurstLen/Rate - (BurstLen-1)·BurstGap, which must be
// positive.
package blockgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fabemu/fabemu/internal/rng"
	"github.com/fabemu/fabemu/internal/units"
	"github.com/fabemu/fabemu/tracefmt"
)

// SizeWeight is one entry of a request-size mix.
type SizeWeight struct {
	Bytes  int32
	Weight float64
}

// Profile holds every knob of the generator.
type Profile struct {
	// Name and Source describe where the numbers come from.
	Name   string
	Source string
	// Rate is the mean request rate in requests per second.
	Rate float64
	// ReadFraction is the probability that a request is a read.
	ReadFraction float64
	// Sizes is the request-size mix (weights need not sum to 1).
	Sizes []SizeWeight
	// Disks is the number of devices; DiskSkew is the Zipf exponent of
	// their popularity (0 = uniform); disk 0 is the hottest.
	Disks    int
	DiskSkew float64
	// DiskBytes is the capacity of each disk; offsets fall inside it.
	DiskBytes int64
	// BurstLen is the mean number of requests per ON burst (>= 1).
	BurstLen float64
	// BurstGap is the mean inter-arrival time inside a burst.
	BurstGap time.Duration
	// IdleCV is the coefficient of variation of OFF gaps (>= 1).
	IdleCV float64
	// SeqRead and SeqWrite are the probabilities that a read / write
	// continues where the previous request on its disk ended.
	SeqRead, SeqWrite float64
	// SyncRead and SyncWrite are the probabilities that a read / write is
	// synchronous.
	SyncRead, SyncWrite float64
	// Initiators is the number of issuers (pids); each burst comes from
	// one initiator drawn uniformly.
	Initiators int
}

// The profiles. Every number is cited; numbers marked "assumption" are
// ours, chosen to fit the cited shape, and are knobs.
var profiles = map[string]Profile{
	// cello99: the 1999 cello timesharing server.
	"cello99": {
		Name: "cello99",
		Source: "Lee, Kim, Shipman, Oral, Kim, \"Preemptible I/O Scheduling of Garbage Collection for " +
			"Solid State Drives\", IEEE TCAD 32(2), 2013, Table VIII (Cello: mean request 7.06 KB, " +
			"19.63% reads, 74.24 IOPS, 31.32% of writes within 1.5 ms of the previous request); " +
			"23 disks as stated by the interconnect papers that replay cello99; sequentiality from " +
			"Ruemmler & Wilkes, USENIX Winter 1993 (reads 18-33%, writes 8-12% sequential)",
		Rate:         74.24,
		ReadFraction: 0.1963,
		// mean 7,066 B = 7.06 kB; 1/2/4/8 KiB mix (shape: assumption)
		Sizes:     []SizeWeight{{1024, 0.06}, {2048, 0.06}, {4096, 0.08}, {8192, 0.80}},
		Disks:     23,
		DiskSkew:  1.2,     // assumption: a few hot disks carry most requests
		DiskBytes: 4 << 30, // assumption: 4 GiB per disk (late-1990s drives)
		// BurstLen 1.25 with 0.5 ms in-burst gaps (and the short branch of
		// the idle-gap mix) puts about 31% of inter-arrivals under 1.5 ms,
		// as Lee et al. report for writes.
		BurstLen:   1.25,
		BurstGap:   500 * time.Microsecond,
		IdleCV:     3, // assumption: bursty, CV of inter-arrivals about 3.5
		SeqRead:    0.25,
		SeqWrite:   0.10,
		SyncRead:   0.9, // assumption: reads mostly synchronous
		SyncWrite:  0.3, // assumption: writes mostly delayed/async
		Initiators: 1,
	},
	// cello92: the 1992 cello timesharing system.
	"cello92": {
		Name: "cello92",
		Source: "Ruemmler & Wilkes, \"UNIX disk access patterns\", USENIX Winter 1993 / HPL-92-152 " +
			"(57% writes; 50-75% of I/Os synchronous; reads 18-33%, writes 8-12% sequential; " +
			"very bursty, writes rarely come singly); size mix and burstiness (inter-arrival CV 9.8) " +
			"measured on the same-family 1992 hplajw trace shipped with DiskSim (ajw.1week.srt: " +
			"8 KiB 60%, 2 KiB 21%, 1 KiB 11%, 4 KiB 4%)",
		Rate:         5, // assumption: no per-second rate found in the sources; a knob
		ReadFraction: 0.43,
		Sizes:        []SizeWeight{{1024, 0.118}, {2048, 0.214}, {4096, 0.044}, {8192, 0.624}},
		Disks:        8,   // assumption: 10.4 GB of storage on 1992 drives
		DiskSkew:     1.5, // assumption (ajw: 95% of requests on one of two disks)
		DiskBytes:    1300 << 20,
		BurstLen:     3,
		BurstGap:     2 * time.Millisecond,
		IdleCV:       5.6, // gives an inter-arrival CV of about 9.8, as measured on ajw
		SeqRead:      0.25,
		SeqWrite:     0.10,
		SyncRead:     0.9,
		SyncWrite:    0.45, // with SyncRead gives 64% sync overall, inside 50-75%
		Initiators:   1,
	},
}

// Profiles lists the profile names.
func Profiles() []string {
	var out []string
	for k := range profiles {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Like returns a copy of a named profile.
func Like(name string) (Profile, error) {
	p, ok := profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown profile %q (have %s)", name, strings.Join(Profiles(), ", "))
	}
	p.Sizes = append([]SizeWeight(nil), p.Sizes...)
	return p, nil
}

// MeanSize is the mean of the size mix in bytes.
func (p Profile) MeanSize() float64 {
	var s, w float64
	for _, x := range p.Sizes {
		s += float64(x.Bytes) * x.Weight
		w += x.Weight
	}
	if w == 0 {
		return 0
	}
	return s / w
}

// The bounds of Validate: a rate between one request in 1000 s and one
// per nanosecond (the resolution of a trace's times), so that gaps stay
// far inside a time.Duration; bursts of at most a million requests.
const (
	MinRate     = 1e-3
	MaxRate     = 1e9
	MaxBurstLen = 1e6
)

// offMean is the mean OFF gap that makes the long-run rate Rate.
func (p Profile) offMean() float64 {
	return p.BurstLen/p.Rate - (p.BurstLen-1)*p.BurstGap.Seconds()
}

// Validate checks the knobs.
func (p Profile) Validate() error {
	switch {
	case !(p.Rate >= MinRate && p.Rate <= MaxRate):
		return fmt.Errorf("rate %v: want %g..%g requests/s (a trace's times are whole nanoseconds)", p.Rate, MinRate, MaxRate)
	case !(p.ReadFraction >= 0 && p.ReadFraction <= 1):
		return fmt.Errorf("read fraction must be in [0,1], not %v", p.ReadFraction)
	case len(p.Sizes) == 0:
		return fmt.Errorf("size mix is empty")
	case p.Disks < 1 || p.Disks > 1<<16:
		return fmt.Errorf("disks must be in 1..65536, not %d", p.Disks)
	case !(p.DiskSkew >= 0):
		return fmt.Errorf("disk skew must be >= 0, not %v", p.DiskSkew)
	case !(p.BurstLen >= 1 && p.BurstLen <= MaxBurstLen):
		return fmt.Errorf("burst length %v: want 1..%g requests", p.BurstLen, MaxBurstLen)
	case p.BurstGap < 0:
		return fmt.Errorf("burst gap must be >= 0")
	case !(p.IdleCV >= 1):
		return fmt.Errorf("idle CV must be >= 1, not %v", p.IdleCV)
	case p.Initiators < 1:
		return fmt.Errorf("initiators must be >= 1, not %d", p.Initiators)
	case !(p.offMean() > 0):
		return fmt.Errorf("burst length %v x burst gap %v leaves no idle time at rate %v/s", p.BurstLen, p.BurstGap, p.Rate)
	}
	for _, s := range []float64{p.SeqRead, p.SeqWrite, p.SyncRead, p.SyncWrite} {
		if !(s >= 0 && s <= 1) {
			return fmt.Errorf("probabilities must be in [0,1], not %v", s)
		}
	}
	var w float64
	for _, s := range p.Sizes {
		if s.Bytes <= 0 || s.Bytes%512 != 0 || !(s.Weight >= 0) {
			return fmt.Errorf("size %d (weight %v): sizes must be positive multiples of 512 with weights >= 0", s.Bytes, s.Weight)
		}
		if int64(s.Bytes) > p.DiskBytes {
			return fmt.Errorf("size %d is larger than a disk (%d bytes)", s.Bytes, p.DiskBytes)
		}
		w += s.Weight
	}
	if !(w > 0) {
		return fmt.Errorf("size weights sum to 0")
	}
	return nil
}

// Generator yields the records of one synthetic trace.
type Generator struct {
	p                     Profile
	arrive, kind, place   *rand.Rand
	sizeCDF, diskCDF      []float64
	now                   time.Duration
	left                  int // requests left in the current burst
	started               bool
	initiator             uint32
	lastEnd               []int64
	h2p, h2mean1, h2mean2 float64
}

// New returns a generator for p seeded with seed. Arrival times, request
// kinds (op, size, sync) and placement (disk, offset) come from separate
// streams, so changing e.g. the size mix does not move arrivals.
func New(p Profile, seed uint64) (*Generator, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{
		p:       p,
		arrive:  rng.Stream(seed, "blockgen.arrival", 0),
		kind:    rng.Stream(seed, "blockgen.kind", 0),
		place:   rng.Stream(seed, "blockgen.place", 0),
		lastEnd: make([]int64, p.Disks),
	}
	var sum float64
	for _, s := range p.Sizes {
		sum += s.Weight
		g.sizeCDF = append(g.sizeCDF, sum)
	}
	for i := range g.sizeCDF {
		g.sizeCDF[i] /= sum
	}
	sum = 0
	for i := 0; i < p.Disks; i++ {
		sum += math.Pow(float64(i+1), -p.DiskSkew)
		g.diskCDF = append(g.diskCDF, sum)
	}
	for i := range g.diskCDF {
		g.diskCDF[i] /= sum
	}
	// Balanced-means H2 for the OFF gaps: with c² = IdleCV²,
	// p1 = (1 + sqrt((c²-1)/(c²+1)))/2, mean_i = m / (2 p_i).
	c2 := p.IdleCV * p.IdleCV
	g.h2p = (1 + math.Sqrt((c2-1)/(c2+1))) / 2
	m := p.offMean()
	g.h2mean1 = m / (2 * g.h2p)
	g.h2mean2 = m / (2 * (1 - g.h2p))
	return g, nil
}

func pick(cdf []float64, u float64) int {
	i := sort.SearchFloat64s(cdf, u)
	if i >= len(cdf) {
		i = len(cdf) - 1
	}
	return i
}

// Next returns the next record. Arrivals start at 0 and are rounded to the
// microsecond, so every writer keeps them exactly.
func (g *Generator) Next() tracefmt.Record {
	p := &g.p
	var gap float64
	if g.left > 0 {
		gap = g.arrive.ExpFloat64() * p.BurstGap.Seconds()
	} else {
		// new burst: geometric length with mean BurstLen
		g.left = 1
		for g.arrive.Float64() >= 1/p.BurstLen {
			g.left++
		}
		if g.started {
			if g.arrive.Float64() < g.h2p {
				gap = g.arrive.ExpFloat64() * g.h2mean1
			} else {
				gap = g.arrive.ExpFloat64() * g.h2mean2
			}
		}
		g.initiator = uint32(g.arrive.IntN(p.Initiators))
	}
	g.started = true
	g.left--
	g.now += time.Duration(math.Round(gap*1e6)) * time.Microsecond

	rec := tracefmt.Record{Arrival: g.now, Initiator: g.initiator, Op: tracefmt.OpWrite}
	seq, sync := p.SeqWrite, p.SyncWrite
	if g.kind.Float64() < p.ReadFraction {
		rec.Op = tracefmt.OpRead
		seq, sync = p.SeqRead, p.SyncRead
	}
	rec.Size = p.Sizes[pick(g.sizeCDF, g.kind.Float64())].Bytes
	rec.Sync = g.kind.Float64() < sync
	disk := pick(g.diskCDF, g.place.Float64())
	rec.Device = uint32(disk)
	end := g.lastEnd[disk]
	if g.place.Float64() < seq && end+int64(rec.Size) <= p.DiskBytes && end > 0 {
		rec.Offset = end
	} else {
		slots := (p.DiskBytes - int64(rec.Size)) / 1024
		rec.Offset = g.place.Int64N(slots+1) * 1024
	}
	g.lastEnd[disk] = rec.Offset + int64(rec.Size)
	return rec
}

// Write generates n records into w.
func (g *Generator) Write(w tracefmt.Writer, n int64) error {
	for i := int64(0); i < n; i++ {
		if err := w.Write(g.Next()); err != nil {
			return err
		}
	}
	return nil
}

// ParseSizes parses a size mix "1024:0.06,2048:0.06,8192:0.8" (sizes may
// carry a k/K suffix for KiB).
func ParseSizes(s string) ([]SizeWeight, error) {
	var out []SizeWeight
	for _, part := range strings.Split(s, ",") {
		sz, wt, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("size mix entry %q: want SIZE:WEIGHT", part)
		}
		mult := int64(1)
		if strings.HasSuffix(sz, "k") || strings.HasSuffix(sz, "K") {
			mult, sz = 1024, sz[:len(sz)-1]
		}
		// Whole-text parses: fmt.Sscan read "4GiB" as 4.
		b, err := strconv.ParseInt(strings.TrimSpace(sz), 10, 64)
		if err != nil {
			if ub, uerr := units.ParseBytes(strings.TrimSpace(sz)); uerr == nil && mult == 1 {
				b, err = int64(ub), nil
			}
		}
		if err != nil || b <= 0 || b > math.MaxInt32/mult {
			return nil, fmt.Errorf("size mix entry %q: want a size of 1 byte to 2 GiB (512, 4k, 8KiB)", part)
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(wt), 64)
		if err != nil || !(w >= 0) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("size mix entry %q: want a finite weight of 0 or more", part)
		}
		out = append(out, SizeWeight{int32(b * mult), w})
	}
	return out, nil
}
