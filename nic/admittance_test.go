package nic_test

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
)

// TestAdmittanceValidate: nic.model names an end node; the admittance
// queues need a positive bound and do not combine with the paper 002
// injection interface or adaptive-inorder.
func TestAdmittanceValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*nic.Config)
		err  string
	}{
		{"fifo", func(c *nic.Config) { c.Model = "fifo" }, ""},
		{"admittance", func(c *nic.Config) { c.Model = "admittance" }, ""},
		{"unknown", func(c *nic.Config) { c.Model = "voq" }, `nic.model "voq"`},
		{"no messages", func(c *nic.Config) { c.Model, c.Admittance.Messages = "admittance", -1 }, "nic.admittance.messages -1"},
		{"no injection queue", func(c *nic.Config) { c.Model, c.Admittance.InjectionPackets = "admittance", -2 }, "nic.admittance.injection_packets -2"},
		{"queues", func(c *nic.Config) { c.Model, c.InjectionQueues.Count = "admittance", 4 }, "nic.injection_queues.count 4"},
		{"inorder", func(c *nic.Config) { c.Model, c.Delivery.Mode = "admittance", nic.DeliveryAdaptiveInOrder }, "adaptive-inorder"},
	} {
		c := nic.DefaultConfig()
		tc.edit(&c)
		err := c.Validate()
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestAdmittanceCornerCase: corner case 2 of paper 000 in miniature on
// the 64-host MIN (8 KB memories) with the admittance end node and each switch
// architecture: every invariant holds (packets conserved, counting the
// packets in admittance queues as queued at the sources; credits, also
// per queue with partitioned memory), deterministic routing delivers in
// order, and the sources at the full link rate are stalled by their full
// admittance queues (refused messages) instead of building a backlog.
// The sources hold at most what their queues allow: 4 messages per
// destination and 4 packets per injection queue, one injection queue per
// queue of the first switch's input (1 for 1q and recn, 4 for 4q, 8 for
// voqsw, 64 for voqnet). 4q is not required to stall a source: each of
// its queues holds a quarter of the 8 KB port memory and a hot source's
// flow keeps to one of them, so the 53 packets a hot source offers in the
// hot period fit in the queues of the switches on its path.
func TestAdmittanceCornerCase(t *testing.T) {
	for _, tc := range []struct {
		sw     string
		queues uint64
	}{{"1q", 1}, {"4q", 4}, {"voqsw", 8}, {"voqnet", 64}, {"recn", 1}} {
		sw := tc.sw
		t.Run(sw, func(t *testing.T) {
			c, err := model.LookupPreset("paper000-min64")
			if err != nil {
				t.Fatal(err)
			}
			c.Fabric.Switch = sw
			c.NIC.Model = nic.ModelAdmittance
			// hot 16 to 19.4 us; 8 KB memories, so that the tree reaches
			// the sources within the hot period (128 KB take 128 us to fill)
			c.Traffic.Pattern = "corner2:0.02,sources=stride"
			c.Fabric.InputBuffer, c.Fabric.OutputBuffer = 8*1024, 8*1024
			c.Run.Warmup, c.Run.Duration = 1*des.Microsecond, 24*des.Microsecond
			s := runOK(t, c)
			if s.Packets.RefusedMessages == 0 && sw != "4q" {
				t.Error("no source stalled at the full link rate")
			}
			if s.Invariants.InOrder == nil || !*s.Invariants.InOrder {
				t.Error("deterministic routing delivered out of order")
			}
			// 64 sources, each at most 4 messages of one 64-byte packet per
			// destination queue plus 4 per injection queue; the random
			// sources may hold some for every destination
			if limit := 64 * (63*4 + 4*tc.queues); s.Packets.QueuedAtSources > limit {
				t.Errorf("%d packets queued at sources, beyond the admittance bound %d", s.Packets.QueuedAtSources, limit)
			}
			t.Logf("%s: delivered %d, refused %d messages, %d queued at sources", sw, s.Packets.Delivered, s.Packets.RefusedMessages, s.Packets.QueuedAtSources)
		})
	}
}
