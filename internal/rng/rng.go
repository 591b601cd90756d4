// Package rng owns fabemu's random-number streams. Every component that
// draws random numbers (a host's traffic generator, a switch's arbiter, a
// topology builder) gets its own stream derived from the run's seed, the
// component's name and its index, so adding or removing a component never
// changes the draws any other component sees (DESIGN: "random numbers come
// from seeded per-component streams").
//
// The derivation is part of the reproducibility contract: the same
// (seed, component, index) gives the same stream in every build. It uses
// FNV-1a (64 bit) over the component name and the SplitMix64 finalizer to
// mix seed, name hash and index into the two 64-bit seeds of a PCG
// generator from math/rand/v2. Changing it changes every result; the tests
// pin golden values so that cannot happen by accident.
package rng

import "math/rand/v2"

// FNV-1a 64-bit parameters.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// mix64 is the SplitMix64 output function (Steele, Lea, Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014): a bijection on
// 64-bit values with good avalanche.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// hashName is FNV-1a over the bytes of s.
func hashName(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// Seeds returns the two PCG seeds of the stream for (seed, component,
// index). Stream uses them; they are exported for components that keep a
// rand.PCG by value to avoid an allocation.
func Seeds(seed uint64, component string, index int) (uint64, uint64) {
	s := mix64(seed)
	s = mix64(s ^ hashName(component))
	s = mix64(s ^ uint64(int64(index)))
	return mix64(s ^ 0x243f6a8885a308d3), mix64(s ^ 0x13198a2e03707344)
}

// Stream returns the random stream of one component instance: component
// names the kind ("traffic.dest", "switch.arbiter"), index tells instances
// apart (host or switch number). Distinct (component, index) pairs give
// independent-looking streams; equal arguments give identical streams.
func Stream(seed uint64, component string, index int) *rand.Rand {
	s1, s2 := Seeds(seed, component, index)
	return rand.New(rand.NewPCG(s1, s2))
}
