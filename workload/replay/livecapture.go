package replay

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/tracefmt/pcap"
)

// LiveCapture turns frames captured on a live interface into messages on a
// session someone else runs (the daemon's pacer): each frame goes from the
// host of its source endpoint to the host of its destination endpoint,
// sized by its original length, at the time the caller gives. Endpoints
// are placed with a capture replay's mapping (hostMap: in order of first
// appearance onto a permutation of the hosts drawn from the seed, under
// the same stream name), restricted to the hosts given; broadcast and
// multicast go to every other host holding an endpoint, as in a replay.
//
// A live interface has no end, so an endpoint met when every host
// already holds one is not an error: its frames are counted as unplaced
// and the first such endpoint is reported.
type LiveCapture struct {
	nw     *nic.Network
	hm     *hostMap
	hosts  []int // the map's host k is hosts[k]
	mapBy  string
	doneFn func(*nic.Message, des.Time)
	p      LiveCaptureProgress
}

// LiveCaptureProgress is what a live capture has put into the fabric.
type LiveCaptureProgress struct {
	// Frames counts the frames handed to the model; Sent those that entered
	// the fabric, Bytes their original lengths. Local frames (between
	// endpoints on one host), Unmapped frames (no address to map by) and
	// Unplaced frames (an endpoint beyond the hosts) stay out.
	Frames   uint64 `json:"frames"`
	Sent     uint64 `json:"sent"`
	Bytes    uint64 `json:"bytes"`
	Local    uint64 `json:"local_frames"`
	Unmapped uint64 `json:"unmapped_frames"`
	Unplaced uint64 `json:"unplaced_frames"`
	// Group counts broadcast and multicast frames; Copies the messages
	// sent (one per destination host); Delivered those the fabric
	// delivered, DeliveredBytes their bytes; Outstanding those in flight.
	Group          uint64 `json:"group_frames"`
	Copies         uint64 `json:"copies"`
	Delivered      uint64 `json:"copies_delivered"`
	DeliveredBytes uint64 `json:"copies_delivered_bytes"`
	Outstanding    uint64 `json:"copies_outstanding"`
	// MapBy is the endpoint mapping; Endpoints the endpoints met so far
	// with their hosts (the first 64), EndpointsTotal all of them.
	MapBy          string         `json:"map_by"`
	Endpoints      []EndpointHost `json:"endpoints"`
	EndpointsTotal int            `json:"endpoints_total"`
	// Error is the first frame that could not be placed, if any.
	Error string `json:"error,omitempty"`
}

// maxListedEndpoints bounds LiveCaptureProgress.Endpoints.
const maxListedEndpoints = 64

// NewLiveCapture places a live capture's endpoints on hosts (at least two)
// with the seed; by is MapByAuto (or ""), MapByMAC or MapByIP; name
// names the source in messages (the interface).
func NewLiveCapture(s *model.Session, name, by string, seed uint64, hosts []int) (*LiveCapture, error) {
	by = mapBy(by)
	switch by {
	case MapByAuto, MapByMAC, MapByIP:
	default:
		return nil, fmt.Errorf("map by %q: want auto, mac or ip", by)
	}
	if len(hosts) < 2 {
		return nil, fmt.Errorf("%d hosts to carry the capture; it needs at least two", len(hosts))
	}
	hm, err := newHostMap(len(hosts), seed, "")
	if err != nil {
		return nil, err
	}
	hm.capture = name
	l := &LiveCapture{nw: s.Net, hm: hm, hosts: hosts, mapBy: by}
	l.p.MapBy = by
	l.doneFn = l.done
	return l, nil
}

// liveCopy is a LiveCapture message's Tag.
type liveCopy struct{}

// Frame sends one captured frame (decoded headers in p, original length
// p.OrigLen; p.Data is not used) at simulated time now. Engine goroutine
// only.
func (l *LiveCapture) Frame(p *pcap.Packet, now des.Time) {
	l.p.Frames++
	rt, err := l.hm.route(p, l.mapBy)
	switch {
	case err != nil:
		l.p.Unplaced++
		if l.p.Error == "" {
			l.p.Error = fmt.Sprintf("%s: frame %d: more endpoints than the %d hosts carrying the capture; frames of the endpoints past them are not sent (%v)",
				l.hm.capture, l.p.Frames, len(l.hosts), err)
		}
		return
	case rt.skip:
		l.p.Unmapped++
		return
	case rt.local, rt.group && len(l.hm.mapped) < 2:
		l.p.Local++
		return
	}
	send := func(dst int) {
		m := l.nw.NewMessage()
		m.Src, m.Dst, m.Bytes, m.Gen = l.hosts[rt.src], l.hosts[dst], int64(p.OrigLen), now
		m.Tag, m.Done = liveCopy{}, l.doneFn
		l.p.Copies++
		l.p.Outstanding++
		l.nw.Send(m)
	}
	if rt.group {
		l.p.Group++
		for _, h := range l.hm.mapped {
			if h != rt.src {
				send(h)
			}
		}
	} else {
		send(rt.dst)
	}
	l.p.Sent++
	l.p.Bytes += uint64(p.OrigLen)
}

func (l *LiveCapture) done(m *nic.Message, _ des.Time) {
	l.p.Delivered++
	l.p.DeliveredBytes += uint64(m.Bytes)
	l.p.Outstanding--
}

// Progress reports the capture so far (engine goroutine only).
func (l *LiveCapture) Progress() LiveCaptureProgress {
	p := l.p
	p.EndpointsTotal = len(l.hm.order)
	p.Endpoints = make([]EndpointHost, 0, min(len(l.hm.order), maxListedEndpoints))
	for _, e := range l.hm.order[:min(len(l.hm.order), maxListedEndpoints)] {
		p.Endpoints = append(p.Endpoints, EndpointHost{Endpoint: e.String(), Host: l.hosts[l.hm.seen[e]]})
	}
	return p
}
