// Package sample owns the small synthetic block trace embedded in the
// fabemu binary, so that commands work with no trace at hand. The trace is
// blockgen's cello99 profile with 16 initiators, 24,000 records, seed 1
// (about 330 s of trace time on 23 disks), stored as gzip-compressed
// tracefmt CSV. Regenerate it with
//
//	go test ./tracefmt/sample -run TestSampleMatchesGenerator -update
package sample

import (
	"bytes"
	_ "embed" // the sample trace
	"io"

	"github.com/fabemu/fabemu/tracefmt"
	"github.com/fabemu/fabemu/tracefmt/blockgen"
)

// The parameters the embedded trace was generated with.
const (
	Name       = "cello99-sample"
	Profile    = "cello99"
	Records    = 24000
	Seed       = 1
	Initiators = 16
	// Format is the format of the embedded bytes (gzip-compressed).
	Format = tracefmt.CSV
)

//go:embed cello99-sample.csv.gz
var data []byte

// Bytes returns the embedded trace (gzip-compressed CSV) and its format.
func Bytes() (io.Reader, tracefmt.Format) {
	return bytes.NewReader(data), Format
}

// Open returns a reader over the embedded trace.
func Open(opts tracefmt.Options) (tracefmt.Reader, error) {
	return tracefmt.NewReader(bytes.NewReader(data), Name, Format, opts)
}

// ProfileUsed returns the generator profile of the embedded trace.
func ProfileUsed() blockgen.Profile {
	p, err := blockgen.Like(Profile)
	if err != nil {
		panic(err) // the profile is compiled in
	}
	p.Initiators = Initiators
	return p
}
