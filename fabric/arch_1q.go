package fabric

// oneQArch is paper 000's IQ scheme (§4.3: "just one queue on every input
// and output port", the worst case): one FIFO at every input port. The
// paper's networks have one lane; here a port with several lanes keeps
// one FIFO per lane, because mixing lanes in one FIFO would let a blocked
// packet of one lane hold up the escape lane behind it and break the
// deadlock freedom the lanes give. On a one-lane network (the paper 000
// MIN presets) this is exactly one queue per port, and the switch behaves
// as cioq.
type oneQArch struct{ schemeBase }

// oneQPerLane: one FIFO per lane (paper 000's IQ).
func oneQPerLane(_, _ int) int { return 1 }

func newOneQ(f *Fabric) switchArch {
	return &oneQArch{schemeBase{cioqArch{vlQueues{f}}, oneQPerLane(0, 0)}}
}

func (*oneQArch) enqueue(_ *inPort, p *Packet) int { return int(p.VL) }
