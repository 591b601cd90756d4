package tracefmt

import (
	"io"
	"math"
	"math/bits"
	"sort"
	"time"
)

// Stats summarises a trace. Field order is the JSON order and is stable.
type Stats struct {
	File   string `json:"file,omitempty"`
	Format Format `json:"format,omitempty"`
	// Records is the number of requests.
	Records int64 `json:"records"`
	// FirstArrivalS is the first request's arrival in seconds since the
	// format's epoch.
	FirstArrivalS float64 `json:"first_arrival_s"`
	// DurationS is last arrival minus first arrival, in seconds.
	DurationS float64 `json:"duration_s"`
	// RatePerS is Records / DurationS (0 when the duration is 0).
	RatePerS     float64 `json:"request_rate_per_s"`
	Reads        int64   `json:"reads"`
	Writes       int64   `json:"writes"`
	ReadFraction float64 `json:"read_fraction"`
	SyncFraction float64 `json:"sync_fraction"`
	TotalBytes   int64   `json:"total_bytes"`
	// MeanSizeBytes is TotalBytes / Records.
	MeanSizeBytes float64 `json:"mean_size_bytes"`
	SizeMinBytes  int64   `json:"size_min_bytes"`
	SizeP50Bytes  int64   `json:"size_p50_bytes"`
	SizeP90Bytes  int64   `json:"size_p90_bytes"`
	SizeP99Bytes  int64   `json:"size_p99_bytes"`
	SizeMaxBytes  int64   `json:"size_max_bytes"`
	// SizesExact is false when the trace had so many distinct sizes that the
	// percentiles come from log buckets (1/8 octave) instead.
	SizesExact bool `json:"sizes_exact"`
	// TopSizes are the most frequent request sizes, most frequent first.
	TopSizes []SizeCount `json:"top_sizes"`
	// InterarrivalMeanS and InterarrivalCV describe the gaps between
	// consecutive records in file order (a step back in time counts as a
	// zero gap); CV is standard deviation over mean, the burstiness
	// measure (1 for Poisson arrivals).
	InterarrivalMeanS float64 `json:"interarrival_mean_s"`
	InterarrivalCV    float64 `json:"interarrival_cv"`
	// ServiceRecords counts records with a traced service time, and
	// ServiceMeanS is their mean.
	ServiceRecords int64   `json:"service_records"`
	ServiceMeanS   float64 `json:"service_mean_s"`
	// OutOfOrder counts records arriving before an earlier record.
	OutOfOrder int64 `json:"out_of_order"`
	// Devices are per-device counts, by device index.
	Devices []DeviceStats `json:"devices"`
}

// SizeCount is how many requests had one size.
type SizeCount struct {
	Bytes int64 `json:"bytes"`
	Count int64 `json:"count"`
}

// DeviceStats are the counts of one device.
type DeviceStats struct {
	ID       uint32 `json:"id"`
	Name     string `json:"name"`
	Requests int64  `json:"requests"`
	Reads    int64  `json:"reads"`
	Bytes    int64  `json:"bytes"`
}

// maxExactSizes bounds the exact size histogram; beyond it sizes go into
// log buckets so memory stays bounded whatever the trace.
const maxExactSizes = 1 << 16

// Summarizer accumulates Stats one record at a time in memory bounded by the
// number of devices and distinct sizes (capped), not the trace length.
type Summarizer struct {
	n, reads, syncs, bytes int64
	first, prev            time.Duration
	sizes                  map[int64]int64
	exact                  bool
	minSize, maxSize       int64
	// Welford running mean and M2 of inter-arrival seconds
	iaN         int64
	iaMean, iaM float64
	svcN        int64
	svcSum      float64
	ooo         int64
	maxArrival  time.Duration
	devs        map[uint32]*DeviceStats
}

// NewSummarizer returns an empty Summarizer.
func NewSummarizer() *Summarizer {
	return &Summarizer{sizes: map[int64]int64{}, exact: true, devs: map[uint32]*DeviceStats{}}
}

// sizeBucket rounds s to 3 significant bits (8 buckets per octave).
func sizeBucket(s int64) int64 {
	if s < 16 {
		return s
	}
	shift := bits.Len64(uint64(s)) - 4
	return (s >> shift) << shift
}

// Add counts one record.
func (s *Summarizer) Add(r Record) {
	size := int64(r.Size)
	if s.n == 0 {
		s.first, s.minSize, s.maxSize, s.maxArrival = r.Arrival, size, size, r.Arrival
	} else {
		gap := r.Arrival - s.prev
		if gap < 0 {
			gap = 0
		}
		x := gap.Seconds()
		s.iaN++
		d := x - s.iaMean
		s.iaMean += d / float64(s.iaN)
		s.iaM += d * (x - s.iaMean)
		if r.Arrival < s.maxArrival {
			s.ooo++
		}
	}
	s.n++
	s.prev = r.Arrival
	if r.Arrival > s.maxArrival {
		s.maxArrival = r.Arrival
	}
	if r.Arrival < s.first {
		s.first = r.Arrival
	}
	if r.Op == OpRead {
		s.reads++
	}
	if r.Sync {
		s.syncs++
	}
	s.bytes += size
	s.minSize = min(s.minSize, size)
	s.maxSize = max(s.maxSize, size)
	if _, ok := s.sizes[size]; ok {
		s.sizes[size]++
	} else if len(s.sizes) < maxExactSizes {
		s.sizes[size] = 1
	} else {
		s.exact = false
		s.sizes[sizeBucket(size)]++
	}
	if r.HasService {
		s.svcN++
		s.svcSum += r.Service.Seconds()
	}
	d := s.devs[r.Device]
	if d == nil {
		d = &DeviceStats{ID: r.Device}
		s.devs[r.Device] = d
	}
	d.Requests++
	d.Bytes += size
	if r.Op == OpRead {
		d.Reads++
	}
}

// Stats returns the summary so far; name, if not nil, names the devices.
func (s *Summarizer) Stats(name func(uint32) string) *Stats {
	st := &Stats{Records: s.n, SizesExact: s.exact, Devices: []DeviceStats{}, TopSizes: []SizeCount{}}
	if s.n == 0 {
		return st
	}
	st.FirstArrivalS = s.first.Seconds()
	st.DurationS = (s.maxArrival - s.first).Seconds()
	if st.DurationS > 0 {
		st.RatePerS = float64(s.n) / st.DurationS
	}
	st.Reads, st.Writes = s.reads, s.n-s.reads
	st.ReadFraction = float64(s.reads) / float64(s.n)
	st.SyncFraction = float64(s.syncs) / float64(s.n)
	st.TotalBytes = s.bytes
	st.MeanSizeBytes = float64(s.bytes) / float64(s.n)
	st.SizeMinBytes, st.SizeMaxBytes = s.minSize, s.maxSize
	keys := make([]int64, 0, len(s.sizes))
	for k := range s.sizes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	// nearest-rank percentiles: the smallest size with cumulative count >= p*n
	pct := func(p float64) int64 {
		rank := int64(math.Ceil(p * float64(s.n)))
		var cum int64
		for _, k := range keys {
			cum += s.sizes[k]
			if cum >= rank {
				return k
			}
		}
		return keys[len(keys)-1]
	}
	st.SizeP50Bytes, st.SizeP90Bytes, st.SizeP99Bytes = pct(0.50), pct(0.90), pct(0.99)
	for _, k := range keys {
		st.TopSizes = append(st.TopSizes, SizeCount{k, s.sizes[k]})
	}
	sort.SliceStable(st.TopSizes, func(i, j int) bool { return st.TopSizes[i].Count > st.TopSizes[j].Count })
	if len(st.TopSizes) > 8 {
		st.TopSizes = st.TopSizes[:8]
	}
	if s.iaN > 0 {
		st.InterarrivalMeanS = s.iaMean
		if s.iaMean > 0 {
			st.InterarrivalCV = math.Sqrt(s.iaM/float64(s.iaN)) / s.iaMean
		}
	}
	st.ServiceRecords = s.svcN
	if s.svcN > 0 {
		st.ServiceMeanS = s.svcSum / float64(s.svcN)
	}
	st.OutOfOrder = s.ooo
	ids := make([]uint32, 0, len(s.devs))
	for id := range s.devs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		d := *s.devs[id]
		if name != nil {
			d.Name = name(id)
		}
		st.Devices = append(st.Devices, d)
	}
	return st
}

// Summarize reads r to the end and returns its statistics.
func Summarize(r Reader) (*Stats, error) {
	s := NewSummarizer()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		s.Add(rec)
	}
	st := s.Stats(func(d uint32) string { return DeviceName(r, d) })
	st.Format = r.Format()
	return st, nil
}
