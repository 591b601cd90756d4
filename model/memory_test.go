package model

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/topo"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "8GiB": 8 << 30, "1.5G": 3 << 29, "64MiB": 64 << 20, "2k": 2048} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1G", "0", "1e300T", "NaN"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8GiB", "1.5G", "lots", "", "1e300T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParseSize(s); err == nil && v <= 0 {
			t.Fatalf("ParseSize(%q) = %d without error", s, v)
		}
	})
}

// TestEstimateGrowsAndRefuses: the estimate grows with the topology, a
// SAQ architecture counts more queues than plain cioq, and a million
// switches are refused naming topology.k.
func TestEstimateGrowsAndRefuses(t *testing.T) {
	p, err := LookupPreset("torus8x8-dor")
	if err != nil {
		t.Fatal(err)
	}
	m := p.Model
	small, err := EstimateMemory(&m, 0)
	if err != nil {
		t.Fatal(err)
	}
	m.Topology = topo.DefaultConfig(topo.KindTorus)
	m.Topology.K = []int{1000, 1000}
	big, err := EstimateMemory(&m, 0)
	if err != nil {
		t.Fatal(err)
	}
	if big.Counts.Switches != 1000000 || big.Bytes < 100*small.Bytes {
		t.Fatalf("1000x1000: %d switches, %d bytes (8x8: %d)", big.Counts.Switches, big.Bytes, small.Bytes)
	}
	err = CheckMemory(&m, big, 1, 1<<30)
	if err == nil || !strings.HasPrefix(err.Error(), "topology.k=[1000,1000]: 1,000,000 switches") {
		t.Fatalf("CheckMemory = %v", err)
	}
	if err := CheckMemory(&m, small, 1, 1<<40); err != nil {
		t.Fatalf("a small model under a large limit: %v", err)
	}
	m2 := p.Model
	m2.Fabric.Switch = "recn"
	recn, _ := EstimateMemory(&m2, 0)
	if recn.Bytes <= small.Bytes {
		t.Errorf("recn estimate %d not above cioq %d: queues per input not asked of the architecture", recn.Bytes, small.Bytes)
	}
}

// TestEstimateRECNIQNICSAQs: recn-iq's SAQs at the NICs add their table
// and the packets their memory holds, per host: with nic_saqs 4 and a
// 64 KiB NIC SAQ memory of 256-byte packets, 256 packets per host more
// than without them (and the SAQ table).
func TestEstimateRECNIQNICSAQs(t *testing.T) {
	p, err := LookupPreset("paper003-min256-8x8")
	if err != nil {
		t.Fatal(err)
	}
	m := p.Model
	m.Fabric.Switch = "recn-iq"
	m.Fabric.RECNIQ.NICSAQs = -1
	w := Workload{PacketsPerHost: -1, PacketBytes: 256}
	off, err := EstimateRun(&m, w)
	if err != nil {
		t.Fatal(err)
	}
	m.Fabric.RECNIQ.NICSAQs, m.Fabric.RECNIQ.NICMemory = 4, 64<<10
	on, err := EstimateRun(&m, w)
	if err != nil {
		t.Fatal(err)
	}
	hosts := on.Counts.Hosts
	st, held := fabric.HostStateBytes(m.Fabric, 256)
	if held != 256 || st <= 0 {
		t.Fatalf("per host: %d bytes of state, %d packets; want 256 packets", st, held)
	}
	if want := hosts * (st + held*memPerPacket); on.Bytes-off.Bytes != want {
		t.Errorf("NIC SAQs add %d bytes, want %d (%d hosts)", on.Bytes-off.Bytes, want, hosts)
	}
}

// TestEstimateEveryArchitecture: the estimate works for every switch
// architecture of the table (it asks the table for the queues per input,
// without building a fabric) and grows with the queue count: voqnet, a
// queue per destination, needs more than cioq on the 512-host MIN.
func TestEstimateEveryArchitecture(t *testing.T) {
	p, err := LookupPreset("paper000-min512")
	if err != nil {
		t.Fatal(err)
	}
	byArch := map[string]int64{}
	for _, a := range fabric.Architectures() {
		m := p.Model
		m.Fabric.Switch = a.Name
		e, err := EstimateMemory(&m, 0)
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		byArch[a.Name] = e.Bytes
	}
	if byArch["voqnet"] <= byArch["cioq"] || byArch["voqsw"] <= byArch["cioq"] {
		t.Errorf("estimates by architecture %v: voq schemes should need more than cioq", byArch)
	}
	// RECN-IQ's SAQs and CAMs: per read port on pciq-K.
	if byArch["recn-iq"] <= byArch["iq"] || byArch["pciq-2+recn-iq"] <= byArch["pciq-2"] || byArch["pciq-2+recn-iq"] <= byArch["recn-iq"] || byArch["pciq-4+recn-iq"] <= byArch["pciq-2+recn-iq"] {
		t.Errorf("estimates by architecture %v: RECN-IQ's state (more read ports, more SAQs) not counted", byArch)
	}
}
