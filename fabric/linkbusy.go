package fabric

import "github.com/fabemu/fabemu/fabric/des"

// LinkBusy calls fn for every link of the topology (each direction once)
// with the time its sending end has been busy with data packets since the
// start: the sum of their serialisation times, counted when a packet
// starts on the link (what LinkUtilisation divides by the elapsed time).
// A switch output has sw >= 0, its port and host -1; a host's injection
// link has host >= 0 and sw -1. Extra injection ports
// (nic.injection_ports) are left out: they are not links of the topology.
func (f *Fabric) LinkBusy(fn func(sw, port, host int, busy des.Time)) {
	for i := range f.out {
		o := &f.out[i]
		if f.injp != nil && f.extraPort(o) {
			continue
		}
		if o.host >= 0 {
			fn(-1, int(o.port), int(o.host), o.busyTime)
			continue
		}
		fn(int(o.sw), int(o.port), -1, o.busyTime)
	}
}
