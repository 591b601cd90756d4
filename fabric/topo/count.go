package topo

// Counts is the size of the topology a Config describes: what a memory
// estimate needs before anything is built.
type Counts struct {
	Switches int64
	Hosts    int64
	Ports    int64 // switch ports, all switches together
	// Cube: the topology has arithmetic structure (torus, mesh), so
	// routing needs no all-pairs distance tables.
	Cube bool
}

// Count returns the switches, hosts and ports cfg describes from its
// numbers alone, in constant time, without building anything (a file
// topology is read, as its size is in the file). The products saturate
// rather than overflow, so a hostile configuration gives a huge count, not
// a negative one.
func Count(cfg Config) (Counts, error) {
	switch cfg.Kind {
	case KindTorus, KindMesh:
		if len(cfg.Dims()) == 0 {
			return Counts{}, cfg.Validate()
		}
		sw := int64(1)
		for _, k := range cfg.Dims() {
			sw = satMul(sw, int64(max(k, 0)))
		}
		ports := int64(cfg.Ports)
		if ports == 0 {
			ports = int64(CubePortsNeeded(len(cfg.Dims()), cfg.HostsPerSwitch))
		}
		return Counts{Switches: sw, Hosts: satMul(sw, int64(cfg.HostsPerSwitch)), Ports: satMul(sw, ports), Cube: true}, nil
	case KindMIN:
		if cfg.MINRadix < 4 || cfg.Hosts <= 0 {
			return Counts{}, cfg.Validate()
		}
		st, err := MINStagesNeeded(cfg.Hosts, cfg.MINRadix)
		if err != nil {
			return Counts{}, cfg.Validate()
		}
		st = max(st, cfg.Stages)
		per := int64(cfg.Hosts / (cfg.MINRadix / 2))
		sw := satMul(per, int64(st))
		return Counts{Switches: sw, Hosts: int64(cfg.Hosts), Ports: satMul(sw, int64(cfg.MINRadix))}, nil
	case KindIrregular:
		sw := int64(max(cfg.Switches, 0))
		return Counts{Switches: sw, Hosts: satMul(sw, int64(cfg.HostsPerSwitch)), Ports: satMul(sw, int64(cfg.Ports))}, nil
	}
	t, err := Build(cfg)
	if err != nil {
		return Counts{}, err
	}
	c := Counts{Switches: int64(t.NumSwitches()), Hosts: int64(t.NumHosts())}
	for _, s := range t.Switches {
		c.Ports += int64(s.Ports)
	}
	return c, nil
}

func satMul(a, b int64) int64 {
	const lim = int64(1) << 50
	if a == 0 || b == 0 {
		return 0
	}
	if a > lim/b {
		return lim
	}
	return a * b
}
