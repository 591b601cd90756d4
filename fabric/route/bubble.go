package route

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/topo"
)

// bubbleCube is dimension-order routing on a torus with one escape lane and
// no dateline, made deadlock-free by bubble flow control (Carrión et al.,
// HiPC 1997; the escape network of the adaptive bubble router, paper 002
// §3): "Packets in transit inside a safe ring are regulated by VCT", while a
// packet may enter a ring (at injection, from an adaptive lane, or turning
// from the ring of a lower dimension: "considered as new injections into
// the receiving Y-ring") only when the ring's next buffer has room for two
// packets (§5.1: "it allows packet injection when having space at least for
// two packets at the requested virtual channel"). An entry therefore never
// takes a ring's last free packet slot, every ring keeps a free slot (the
// bubble) in which some packet of it can always advance, and the rings of
// one dimension only feed those of higher dimensions, so there is no
// cyclic wait between rings.
//
// The router marks ring entries with Candidate.Bubble = 2; the switch
// checks the room when it selects. CheckEscape contracts each ring to one
// node of the dependency graph: the cycle within a ring is the one bubble
// flow control breaks, and any cycle between rings is still refused.
type bubbleCube struct{ *cube }

// bubblePackets is the bubble of paper 002 §3 and §5.1: room for two
// packets at the ring's next buffer.
const bubblePackets = 2

func newBubbleCube(t *topo.Topology) (*bubbleCube, error) {
	if t.Kind != topo.KindTorus {
		return nil, fmt.Errorf("escape routing bubble needs a torus (its rings are what bubble flow control protects), topology %q is %s; meshes are acyclic with dor", t.Name, t.Kind)
	}
	return &bubbleCube{newCube(t, false)}, nil
}

func (b *bubbleCube) name() string {
	return "dimension order with bubble flow control (torus, one escape lane)"
}

func (b *bubbleCube) vls() int { return 1 }

// ringEntry reports whether a packet that arrived on (inPort, inEscape)
// and leaves on escape port out enters a ring afresh: it was not on the
// escape lane of the same dimension (a minimal path never reverses its
// direction within a dimension, so the same dimension is the same ring).
func (b *bubbleCube) ringEntry(inPort int, inEscape bool, out int) bool {
	return !inEscape || b.dimOf(inPort) != b.dimOf(out)
}

// ring returns the ring the escape channel leaving switch s on port p
// belongs to: its dimension, its direction and the line of switches that
// share every other coordinate.
func (b *bubbleCube) ring(s, p int) int {
	d := b.dimOf(p)
	line := s - b.coord(s, d)*b.stride[d]
	dir := 0
	if p == b.t.DimPorts[d][1] {
		dir = 1
	}
	return (line*len(b.k)+d)*2 + dir
}

// ringName names a ring for messages: "ring d1- through s4".
func (b *bubbleCube) ringName(id int) string {
	dir := "+"
	if id%2 == 1 {
		dir = "-"
	}
	id /= 2
	return fmt.Sprintf("ring d%d%s through s%d", id%len(b.k), dir, id/len(b.k))
}

// bubbleRings is implemented by escape functions whose rings bubble flow
// control protects (bubbleCube).
type bubbleRings interface {
	ringEntry(inPort int, inEscape bool, out int) bool
	ring(s, p int) int
	ringName(id int) string
}
