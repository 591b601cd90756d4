package report

import (
	"io"
	"os"

	"github.com/fabemu/fabemu/internal/outfile"
)

// Stdout is the path that means "standard output" to [WriteFile],
// [WriteJSON], [WriteJSONLines] and [CreateSeries].
const Stdout = outfile.Stdout

// WriteFile calls write with a writer for path and makes the result
// appear all at once, as package outfile does for every output: the data
// goes to a temporary file in the same directory, which is synced and
// renamed over path only if write and every file operation succeeded. On
// failure the temporary file is removed and an existing file at path is
// left untouched; the error names path. A new file gets mode 0644, a
// replaced one keeps its mode.
//
// Path "-" ([Stdout]) writes to standard output; special files such as
// /dev/null are written directly, their errors still reported; a
// directory is refused.
func WriteFile(path string, write func(io.Writer) error) error {
	return writeFileTo(path, os.Stdout, write)
}

// writeFileTo is WriteFile with standard output as a parameter, so tests
// can capture it.
func writeFileTo(path string, stdout io.Writer, write func(io.Writer) error) error {
	return outfile.Write(path, stdout, write)
}
