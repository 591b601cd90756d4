package replay

import (
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// FrameWriter writes Ethernet frames as pcapng with one named interface
// each and a comment per packet, as the replay's pcapng output does: for
// writers outside a replay (the daemon's frames written to its TAPs).
type FrameWriter struct {
	w    *pcapgo.NgWriter
	name string
}

// NewFrameWriter writes the section header (application app) and one
// Ethernet interface per name in ifaces to w; name names w in errors.
func NewFrameWriter(w io.Writer, name, app string, ifaces []string) (*FrameWriter, error) {
	if len(ifaces) == 0 {
		return nil, fmt.Errorf("%s: no interface to write", name)
	}
	iface := func(n string) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: n, LinkType: layers.LinkTypeEthernet, TimestampResolution: 9,
			Description: "frames fabemu wrote to " + n}
	}
	opts := pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: app}}
	nw, err := pcapgo.NewNgWriterInterface(w, iface(ifaces[0]), opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, n := range ifaces[1:] {
		if _, err := nw.AddInterface(iface(n)); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return &FrameWriter{w: nw, name: name}, nil
}

// WriteFrame writes one frame on interface iface at time at.
func (f *FrameWriter) WriteFrame(iface int, at time.Time, data []byte, comment string) error {
	ci := gopacket.CaptureInfo{Timestamp: at.UTC(), CaptureLength: len(data), Length: len(data), InterfaceIndex: iface}
	var opts pcapgo.NgPacketOptions
	if comment != "" {
		opts.Comments = []string{comment}
	}
	if err := f.w.WritePacketWithOptions(ci, data, opts); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	return nil
}

// Flush writes out what the writer buffers.
func (f *FrameWriter) Flush() error {
	if err := f.w.Flush(); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	return nil
}
