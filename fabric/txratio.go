package fabric

import "github.com/fabemu/fabemu/fabric/des"

// The mean transmission-time ratio of paper 001 Figure 1: "Quotient
// between actual and minimum message transmission time versus accepted
// traffic", the quantity Trans-t thresholds (§3: "the obtained values
// when the network is near to the saturation point are quite similar
// (around 2.0) for all the destination distributions considered"). Each
// sample is one packet's ratio on one switch output channel, as
// MeasureTransmissionTimes defines it.

// txMean accumulates the ratios measured from a time on.
type txMean struct {
	on   bool
	from des.Time
	sum  float64
	n    uint64
}

func (m *txMean) add(at des.Time, r float64) {
	if m.on && at >= m.from {
		m.sum += r
		m.n++
	}
}

// MeasureTransmissionRatio makes the switches measure transmission times
// (without marking channels, unless an injection control asked for a
// threshold) and average the ratios of the packets sent from from on.
func (f *Fabric) MeasureTransmissionRatio(from des.Time) {
	if f.tt == nil {
		f.MeasureTransmissionTimes(0)
	}
	f.tt.mean = txMean{on: true, from: from}
}

// TransmissionRatio returns the mean ratio measured since
// MeasureTransmissionRatio and the number of samples; ok is false when it
// was not asked for.
func (f *Fabric) TransmissionRatio() (mean float64, samples uint64, ok bool) {
	if f.tt == nil || !f.tt.mean.on {
		return 0, 0, false
	}
	m := &f.tt.mean
	if m.n == 0 {
		return 0, 0, true
	}
	return m.sum / float64(m.n), m.n, true
}
