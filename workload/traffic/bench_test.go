package traffic

import (
	"strconv"
	"testing"

	"github.com/fabemu/fabemu/internal/units"
)

// go test -run XXX -bench . -benchmem ./workload/traffic

var sinkInt int
var sinkTime int64

func BenchmarkDest(b *testing.B) {
	for _, spec := range []string{"uniform", "bitrev", "transpose", "hotspot:0.2@5", "hotregion", "corner1"} {
		b.Run(spec, func(b *testing.B) {
			p := mustPattern(b, spec, 256)
			rng := testRNG(1)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				d, _ := p.Dest(i&255|1, 900_000_000, rng)
				sinkInt += d
			}
		})
	}
}

func BenchmarkNext(b *testing.B) {
	for _, kind := range []ProcessKind{Bernoulli, Exponential, Periodic} {
		for _, load := range []float64{0.1, 0.9} {
			b.Run(kind.String()+"/"+strconv.FormatFloat(load, 'g', -1, 64), func(b *testing.B) {
				proc, err := NewProcess(kind, load, 1128000)
				if err != nil {
					b.Fatal(err)
				}
				rng := testRNG(1)
				tt := proc.First(0, rng)
				b.ReportAllocs()
				for b.Loop() {
					tt = proc.Next(tt, rng)
				}
				sinkTime = tt
			})
		}
	}
	b.Run("bernoulli/phases", func(b *testing.B) {
		ph, _ := ParsePhases("0.2:100us,0.9:20us;repeat")
		proc, err := NewModulated(Bernoulli, ph, 1128000)
		if err != nil {
			b.Fatal(err)
		}
		rng := testRNG(1)
		tt := proc.First(0, rng)
		b.ReportAllocs()
		for b.Loop() {
			tt = proc.Next(tt, rng)
		}
		sinkTime = tt
	})
}

func BenchmarkGeneratorNext(b *testing.B) {
	size, _ := ParseSizes("256:0.5,4096:0.5")
	g, err := NewGenerator(Config{Pattern: mustPattern(b, "uniform", 256), Process: Bernoulli, Load: 0.5, Sizes: size,
		Link: Link{Rate: 2 * units.Gbps, Overhead: 26}, Seed: 1}, 7)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, _ := g.Next()
		sinkTime = p.Time
	}
}
