// Package report owns fabemu's output machinery: everything a command
// (sim, replay, experiment, sweep, trace stats) needs to put results in
// front of a person or a program, and nothing about what the results mean.
//
// It provides
//
//   - plain-text tables ([Table]) and key/value summaries ([Section]) for
//     terminals and logs, with units in every header and numbers
//     right-aligned, plus number formatting helpers ([FormatFloat],
//     [FormatInt], [FormatPercent]);
//   - JSON output ([WriteJSON]) written atomically (temporary file in the
//     same directory, then rename) or to standard output for path "-",
//     and a version header ([SchemaHeader]) for the summaries commands emit;
//   - time series as JSON lines or CSV ([SeriesWriter], [JSONLinesWriter],
//     [WriteJSONLines]);
//   - a terminal progress line ([Progress]) that stays silent when its
//     writer is not a terminal;
//   - line and bar plots as SVG or PNG ([LinePlot], [BarPlot]) using
//     gonum.org/v1/plot with its embedded Liberation fonts, so plotting needs
//     no fonts installed and no network.
//
// Metric definitions, aggregation and model logic live with the model
// packages; this package only formats and writes what it is given. Apart
// from [Progress], which reads the wall clock to throttle redraws, nothing
// here reads a clock.
package report
