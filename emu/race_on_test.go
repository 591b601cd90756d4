//go:build race

package emu

// raceEnabled: the race detector slows the model ~10x, so the TCP test
// moves less data (64 MiB of adaptive-inorder with background load does
// not fit its deadline).
const raceEnabled = true
