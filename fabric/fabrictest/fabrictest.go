// Package fabrictest is the conformance suite of the fabric: a test
// endpoint that plays every host, small topologies of each family, and
// the checks every switch architecture and allocator must pass (packet
// and credit conservation, buffers within capacity, no deadlock, delivery
// to the right host exactly once, in order where routing promises it,
// analytic zero-load latency, no starvation). The suite in this
// package's tests runs them over every entry of fabric.Architectures and
// fabric.Allocators, so a new architecture or allocator is tested by
// adding its line to the table.
package fabrictest

import (
	"fmt"
	"hash/fnv"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
)

// Endpoint is a test double of the NICs: per-host FIFO injection queues
// and a log of what was delivered. It checks as it goes that every packet
// reaches its destination host once, and counts what arrives out of order
// per (source, destination) stream.
type Endpoint struct {
	F   *fabric.Fabric
	Eng *des.Engine

	queues [][]*fabric.Packet
	sent   uint64
	// Delivered counts packets delivered; Latency sums their
	// generation-to-delivery times.
	Delivered uint64
	Latency   des.Time
	// PerSource counts delivered packets by source host.
	PerSource []uint64
	// OutOfOrder counts packets that arrived with a sequence number other
	// than the next one of their stream.
	OutOfOrder int
	// Errors lists what went wrong (a packet at the wrong host, twice).
	Errors []string
	// RecoveryAdmit, when set, is the injection control of the packets
	// deadlock recovery absorbed (fabric.RecoveryGate); nil admits them.
	// Reinjected counts the ones that started.
	RecoveryAdmit func(h, q int, p *fabric.Packet) bool
	Reinjected    uint64

	nextSeq map[[2]int32]uint64 // next sequence number expected per stream
	sentSeq map[[2]int32]uint64 // next sequence number to send per stream
	seen    map[uint64]bool
	digest  uint64 // order-sensitive hash of (host, packet ID, time)
	lastAt  []des.Time
}

// NewEndpoint returns an endpoint for hosts hosts; attach it to a fabric
// with Attach before sending.
func NewEndpoint(hosts int) *Endpoint {
	return &Endpoint{queues: make([][]*fabric.Packet, hosts), PerSource: make([]uint64, hosts),
		nextSeq: map[[2]int32]uint64{}, sentSeq: map[[2]int32]uint64{}, seen: map[uint64]bool{}, lastAt: make([]des.Time, hosts), digest: 14695981039346656037}
}

// AdmitRecovered implements fabric.RecoveryGate with RecoveryAdmit. A
// refusal schedules no wake-up: the test kicks the hosts when it opens.
func (e *Endpoint) AdmitRecovered(h, q int, p *fabric.Packet) bool {
	return e.RecoveryAdmit == nil || e.RecoveryAdmit(h, q, p)
}

// RecoveredInjected implements fabric.RecoveryGate.
func (e *Endpoint) RecoveredInjected(int, *fabric.Packet, des.Time) { e.Reinjected++ }

// Attach binds the endpoint to the fabric it serves.
func (e *Endpoint) Attach(eng *des.Engine, f *fabric.Fabric) { e.Eng, e.F = eng, f }

// Peek implements fabric.Endpoint.
func (e *Endpoint) Peek(h int) *fabric.Packet {
	if len(e.queues[h]) == 0 {
		return nil
	}
	return e.queues[h][0]
}

// Pop implements fabric.Endpoint.
func (e *Endpoint) Pop(h int, _ des.Time) { e.queues[h] = e.queues[h][1:] }

// Deliver implements fabric.Endpoint.
func (e *Endpoint) Deliver(h int, p *fabric.Packet, at des.Time) {
	if int(p.Dst) != h {
		e.errorf("packet %d for host %d delivered to host %d", p.ID, p.Dst, h)
	}
	if e.seen[p.ID] {
		e.errorf("packet %d delivered twice", p.ID)
	}
	e.seen[p.ID] = true
	k := [2]int32{p.Src, p.Dst}
	if p.Seq != e.nextSeq[k] {
		e.OutOfOrder++
	}
	if p.Seq >= e.nextSeq[k] {
		e.nextSeq[k] = p.Seq + 1
	}
	if at < e.lastAt[h] {
		e.errorf("host %d: delivery at %v before the previous one at %v", h, at, e.lastAt[h])
	}
	e.lastAt[h] = at
	e.Delivered++
	e.PerSource[p.Src]++
	e.Latency += at - p.Gen
	hs := fnv.New64a()
	fmt.Fprintf(hs, "%d %d %d %d", e.digest, h, p.ID, at)
	e.digest = hs.Sum64()
}

func (e *Endpoint) errorf(format string, a ...any) {
	if len(e.Errors) < 20 {
		e.Errors = append(e.Errors, fmt.Sprintf(format, a...))
	}
}

// Send queues a packet of size wire bytes from src to dst with the
// stream's next sequence number and kicks the source's injection link.
func (e *Endpoint) Send(src, dst, size int) *fabric.Packet {
	p := e.F.NewPacket()
	p.Src, p.Dst, p.Size, p.Payload = int32(src), int32(dst), int32(size), int32(size)
	p.Gen = e.Eng.Now()
	p.Seq = e.seqFor(src, dst)
	e.queues[src] = append(e.queues[src], p)
	e.sent++
	e.F.Kick(src)
	return p
}

func (e *Endpoint) seqFor(src, dst int) uint64 {
	k := [2]int32{int32(src), int32(dst)}
	s := e.sentSeq[k]
	e.sentSeq[k] = s + 1
	return s
}

// Sent is the number of packets queued so far; Queued those not yet
// injected.
func (e *Endpoint) Sent() uint64 { return e.sent }

// Queued returns the packets waiting in the hosts' injection queues.
func (e *Endpoint) Queued() int {
	n := 0
	for _, q := range e.queues {
		n += len(q)
	}
	return n
}

// Digest is an order-sensitive hash of every delivery (host, packet,
// time): equal digests mean identical runs.
func (e *Endpoint) Digest() uint64 { return e.digest }
