package topo

import "fmt"

// Bidirectional multistage interconnection networks (MINs).
//
// The papers' MINs are built from switches of radix 2k: k "down" ports
// (0..k-1) toward the hosts or the previous stage and k "up" ports (k..2k-1)
// toward the next stage. N hosts need m = N/k switches per stage. Stage 0
// carries the hosts: host h sits on switch h/k, down port h%k. The up ports
// of the last stage are left unconnected.
//
// Consecutive stages are wired with the k-way perfect shuffle. Number the N
// up ports of stage i by position x = s*k + (p-k) (switch s, up port p) and
// the N down ports of stage i+1 by y = s*k + p (switch s, down port p).
// Up position x is cabled to down position y = σ(x) where
//
//	σ(x) = (k*x mod N) + floor(k*x / N)
//
// For N = k^n this is the rotation of the base-k digits of x one place to
// the left, σ(x_{n-1} x_{n-2} ... x_0) = x_{n-2} ... x_0 x_{n-1}, exactly the
// perfect-shuffle permutation of paper 003 §1 (equation 1.1), which papers
// 000 §4.1 and 003 §4.2 use to interconnect the stages. For N a multiple of
// k but not a power of k (paper 000's 512 hosts of 8-port switches: N = 512,
// k = 4) the same formula is the "deal N cards into k piles" shuffle:
// writing x = q*m + r with 0 <= r < m, σ(x) = k*r + q. It is a permutation
// for any N divisible by k.
//
// Hosts attach to stage 0 without a shuffle in front: a shuffle there would
// only renumber the hosts.
//
// Each up hop replaces one base-k digit of the switch number with a free
// choice, so after ceil(log_k N) stages every stage-0 switch reaches every
// last-stage switch going up, and since links are bidirectional every host
// reaches every other host by going up to a common switch and then down.
// Fewer stages cannot work: a last-stage switch reaches at most k^stages
// hosts going down, so stages >= ceil(log_k N) is necessary, and the tests
// check that it is sufficient for every N divisible by k (also when N is
// not a power of k). Routing on KindMIN relies on this up-then-down
// property; the builder refuses fewer stages.
//
// Paper sizes (8-port switches, k = 4): 64 hosts -> 3 stages of 16 = 48
// switches; 256 -> 4 x 64 = 256; 512 -> 5 x 128 = 640 (paper 000 §4.1).
// Paper 003 §4.2: 256 hosts of 8x8 switches -> 4 stages of 64 = 256
// switches; 256 hosts of 32x32 switches (k = 16) -> 2 stages of 16 = 32.

// MINShuffle is the k-way perfect shuffle σ on N positions (see the
// package's MIN comment): σ(x) = (k*x mod N) + floor(k*x/N).
func MINShuffle(x, k, n int) int { return (k*x)%n + (k*x)/n }

// MINStagesNeeded returns the smallest number of stages with which every
// host of an N-host MIN of radix-2k switches reaches every other host by
// going up and then down: ceil(log_k N) when the shuffle connects at all.
// It returns an error if N is not a positive multiple of k.
func MINStagesNeeded(hosts, radix int) (int, error) {
	if err := checkMINSize(hosts, radix); err != nil {
		return 0, err
	}
	k := radix / 2
	if k == 1 {
		if hosts == 1 {
			return 1, nil
		}
		return 0, fmt.Errorf("min: radix 2 (one up, one down port) cannot connect %d hosts", hosts)
	}
	stages, span := 1, k
	for span < hosts {
		span *= k
		stages++
	}
	return stages, nil
}

func checkMINSize(hosts, radix int) error {
	switch {
	case hosts <= 0:
		return fmt.Errorf("min: hosts = %d: must be at least 1", hosts)
	case radix <= 0:
		return fmt.Errorf("min: min_radix = %d: must be a positive even number of ports", radix)
	case radix%2 != 0:
		return fmt.Errorf("min: min_radix = %d: must be even (k down ports + k up ports)", radix)
	case hosts%(radix/2) != 0:
		return fmt.Errorf("min: hosts = %d is not a multiple of %d (the down ports per switch, min_radix/2)", hosts, radix/2)
	case hosts/(radix/2) > maxSwitches:
		return fmt.Errorf("min: %d hosts need more than %d switches per stage", hosts, maxSwitches)
	}
	return nil
}

// MIN builds a bidirectional multistage network of `hosts` hosts from
// switches with `radix` ports (k = radix/2 down and k up), wired with the
// perfect shuffle between consecutive stages (see the MIN comment above).
// stages = 0 means MINStagesNeeded. Switch index = stage*(hosts/k) + i;
// Switch.Stage is set and Topology.Stages is the stage count.
func MIN(hosts, radix, stages int) (*Topology, error) {
	need, err := MINStagesNeeded(hosts, radix)
	if err != nil {
		return nil, err
	}
	if stages == 0 {
		stages = need
	}
	if stages < 0 {
		return nil, fmt.Errorf("min: stages = %d: must be at least 1", stages)
	}
	if stages < need {
		return nil, fmt.Errorf("min: %d hosts on %d-port switches need at least %d stages (ceil(log_%d %d)) so every host reaches every other going up then down; got %d",
			hosts, radix, need, radix/2, hosts, stages)
	}
	k := radix / 2
	m := hosts / k
	if stages > maxSwitches/m {
		return nil, fmt.Errorf("min: %d stages of %d switches: more than %d switches", stages, m, maxSwitches)
	}
	t := &Topology{
		Name:     fmt.Sprintf("min-%dh-%dp-%ds", hosts, radix, stages),
		Kind:     KindMIN,
		Stages:   stages,
		Switches: make([]Switch, stages*m),
		Hosts:    make([]Host, hosts),
	}
	for st := 0; st < stages; st++ {
		for i := 0; i < m; i++ {
			t.Switches[st*m+i] = Switch{Name: fmt.Sprintf("s%d.%d", st, i), Ports: radix, Stage: st}
		}
	}
	for h := range t.Hosts {
		t.Hosts[h] = Host{Name: fmt.Sprintf("h%d", h), At: PortRef{h / k, h % k}}
	}
	for st := 0; st+1 < stages; st++ {
		for x := 0; x < hosts; x++ {
			y := MINShuffle(x, k, hosts)
			t.Links = append(t.Links, Link{
				A: PortRef{st*m + x/k, k + x%k},
				B: PortRef{(st+1)*m + y/k, y % k},
			})
		}
	}
	if err := t.Finish(); err != nil {
		return nil, err
	}
	return t, nil
}

// MINUp returns, for a KindMIN topology, the up ports (k..2k-1) of switch
// s that are cabled to the next stage; empty on the last stage.
func (t *Topology) MINUp(s int) []int {
	var ps []int
	k := t.Switches[s].Ports / 2
	for p := k; p < t.Switches[s].Ports; p++ {
		if _, ok := t.Peer(s, p); ok {
			ps = append(ps, p)
		}
	}
	return ps
}
