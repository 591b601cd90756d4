package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fabemu/fabemu/emu"
	"github.com/fabemu/fabemu/internal/outfile"
	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/model"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func init() { register(newRunCmd) }

type runFlags struct {
	config      string
	demo        int
	preset      string
	sets        []string
	dl          deliveryFlags
	socket      string
	metricsPort int
	noMetrics   bool
	logFormat   string
	logLevel    string
	dilation    string
	cpuprofile  string
	precise     bool
	rtprio      int
	pcapOut     string
	overload    string
	// requireValid makes the run exit non-zero when an interval was not
	// real-time valid.
	requireValid bool
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon: TAP devices whose frames cross the simulated fabric in real time",
		Long: `Run the fabemu daemon. Every TAP device of the configuration is attached
to a host of the simulated fabric; every frame an application, namespace or
VM sends through it crosses the fabric paced by the wall clock and is
written to the destination TAP. Status is served on a unix socket
(fabemu stat), metrics on 127.0.0.1, logs on stderr.

--demo N creates N network namespaces fabemu-h0..fabemu-h<N-1> with a TAP
each (10.250.0.<i+1>/24, fd00:fab::<i+1>/64) on the default preset and
removes them on exit. SIGTERM or SIGINT stops reading, drains the fabric
for a bounded time, removes every device and namespace the daemon
created and exits 0. Needs CAP_NET_ADMIN (and CAP_SYS_ADMIN for
namespaces).`,
		Example: `  fabemu run --demo 2
  fabemu run --config /etc/fabemu/run.yaml --log-format json
  fabemu run --demo 2 --preset tap-square-10g --delivery adaptive-inorder`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			cfg, err := f.resolve(cmd)
			if err != nil {
				return err
			}
			if err := checkOutputs([]string{f.config, cfg.Background.Trace}, output{"--cpuprofile", f.cpuprofile},
				output{"pcap_out", cfg.PcapOut}); err != nil {
				return err
			}
			stopProfile, err := startCPUProfile(f.cpuprofile, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			defer func() {
				if perr := stopProfile(); perr != nil && err == nil {
					err = perr
				}
			}()
			return runDaemon(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, f.demo > 0, f.requireValid)
		},
	}
	f.registerModel(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.socket, "socket", "", "control API unix socket (overrides api.socket)")
	fs.IntVar(&f.metricsPort, "metrics-port", -1, "Prometheus port on 127.0.0.1 (overrides metrics.port; 0 = any free port)")
	fs.BoolVar(&f.noMetrics, "no-metrics", false, "do not serve Prometheus metrics")
	fs.StringVar(&f.logFormat, "log-format", "", "json or console (overrides log.format)")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error (overrides log.level)")
	fs.StringVar(&f.dilation, "dilation", "", "wall seconds per simulated second, or auto: measure the model's speed at start and take the smallest dilation it keeps up with (overrides pacing.dilation, pacing.dilation_auto)")
	fs.BoolVar(&f.precise, "precise-timer", false, "sleep on a timerfd (sets pacing.precise_timer)")
	fs.IntVar(&f.rtprio, "realtime-priority", -1, "run every daemon thread under SCHED_FIFO at this priority, 1-99, 0 = off (overrides pacing.realtime_priority)")
	fs.StringVar(&f.overload, "overload", "", "backpressure, dilate or none: what the daemon does when the model falls pacing.max_lag behind (overrides pacing.overload)")
	fs.BoolVar(&f.requireValid, "require-valid", false, "exit non-zero if any one-second interval of the run was not real-time valid (the final report says why)")
	fs.StringVar(&f.pcapOut, "pcap-out", "", "record every frame written to a TAP to this pcapng file (overrides pcap_out)")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	_ = fs.MarkHidden("cpuprofile")
	return cmd
}

// registerModel declares the flags that choose the daemon's config and its
// fabric model (for run and config dump run).
func (f *runFlags) registerModel(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.config, "config", "", "daemon config file (YAML; see docs/daemon.md)")
	fs.IntVar(&f.demo, "demo", 0, "create N namespaces with a TAP each on the default preset (instead of --config)")
	fs.StringVar(&f.preset, "preset", "", "fabric preset (overrides model.preset)")
	fs.StringArrayVar(&f.sets, "set", nil, "override one fabric field, e.g. --set fabric.link_rate=10Gbps (repeatable)")
	f.dl.register(cmd)
}

// modelNotes are the resolver's notes on the daemon's fabric model (a
// routing mode forced by the delivery mode).
func modelNotes(cfg emu.RunConfig) []model.Note {
	_, res, err := model.Resolve(cfg.Model.Layers(), model.LookupPreset)
	if err != nil {
		return nil
	}
	return res.Notes
}

// resolve builds the daemon config: the file or the demo, then the flags.
func (f *runFlags) resolve(cmd *cobra.Command) (emu.RunConfig, error) {
	var cfg emu.RunConfig
	var err error
	switch {
	case f.config != "" && f.demo > 0:
		return cfg, errors.New("--config and --demo are exclusive")
	case f.config != "":
		cfg = emu.DefaultRunConfig()
		if err := params.LoadYAML(f.config, &cfg); err != nil {
			return cfg, err
		}
	case cmd.Flags().Changed("demo"):
		if cfg, err = emu.DemoConfig(f.demo); err != nil {
			return cfg, err
		}
	default:
		return cfg, errors.New("give --config FILE or --demo N")
	}
	fs := cmd.Flags()
	if f.preset != "" {
		cfg.Model.Preset = f.preset
	}
	cfg.Model.Set = append(cfg.Model.Set, f.sets...)
	if fs.Changed("delivery") {
		cfg.Model.Delivery = f.dl.delivery
	}
	if fs.Changed("reorder") {
		cfg.Model.Reorder = f.dl.reorder
	}
	if fs.Changed("injection") {
		cfg.Model.Injection = f.dl.injection
	}
	if fs.Changed("socket") {
		cfg.API.Socket = f.socket
	}
	if f.metricsPort >= 0 {
		cfg.Metrics.Port = f.metricsPort
	}
	if f.noMetrics {
		cfg.Metrics.Enabled = false
	}
	if f.logFormat != "" {
		cfg.Log.Format = f.logFormat
	}
	if f.logLevel != "" {
		cfg.Log.Level = f.logLevel
	}
	switch f.dilation {
	case "":
	case "auto":
		cfg.Pacing.DilationAuto = true
	default:
		d, err := strconv.ParseFloat(f.dilation, 64)
		if err != nil || math.IsNaN(d) || math.IsInf(d, 0) {
			return cfg, fmt.Errorf("--dilation %q: want a finite number (wall seconds per simulated second) or auto", f.dilation)
		}
		cfg.Pacing.Dilation, cfg.Pacing.DilationAuto = d, false
	}
	if f.precise {
		cfg.Pacing.PreciseTimer = true
	}
	if f.rtprio < -1 {
		return cfg, fmt.Errorf("--realtime-priority %d: want 1-99, or 0 for off", f.rtprio)
	}
	if f.rtprio >= 0 {
		cfg.Pacing.RealtimePriority = f.rtprio
	}
	if f.pcapOut != "" {
		cfg.PcapOut = f.pcapOut
	}
	if f.overload != "" {
		cfg.Pacing.Overload = f.overload
	}
	where := "config"
	if f.config != "" {
		where = f.config
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", where, err)
	}
	if _, err := cfg.ResolveModel(); err != nil {
		return cfg, fmt.Errorf("%s: %w", where, err)
	}
	return cfg, nil
}

func newLogger(cfg emu.RunConfig, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(cfg.Log.Level)
	if err != nil {
		return nil, err
	}
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if cfg.Log.Format == "json" {
		enc = zapcore.NewJSONEncoder(ec)
	} else {
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), lvl)), nil
}

// checkPrivileges names the capability the daemon lacks, if any.
func checkPrivileges(cfg emu.RunConfig) error {
	caps, err := effectiveCaps()
	if err != nil {
		return err
	}
	const capNetAdmin, capSysAdmin = 12, 21
	taps := 0
	for _, t := range cfg.TAPs {
		if t.IsTAP() {
			taps++
		}
	}
	if taps == 0 {
		return nil // only VM sockets (kind qemu-socket): no capability needed
	}
	if caps&(1<<capNetAdmin) == 0 {
		return errors.New("missing privileges: creating TAP devices needs CAP_NET_ADMIN (run as root or with AmbientCapabilities=CAP_NET_ADMIN)")
	}
	for _, t := range cfg.TAPs {
		if t.Netns != "" && caps&(1<<capSysAdmin) == 0 {
			return fmt.Errorf("missing privileges: TAP %s uses network namespace %s, which needs CAP_SYS_ADMIN", t.Name, t.Netns)
		}
	}
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("missing privileges: cannot open /dev/net/tun: %v", err)
	}
	return f.Close()
}

func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("/proc/self/status has no CapEff line")
}

// apiIdleTimeout closes keep-alive connections of the control API and the
// metrics endpoint that sit idle, so that clients which never close cannot
// pile up connections in a long-running daemon.
const apiIdleTimeout = 30 * time.Second

// listenAPI opens the control socket with mode 0600, replacing a stale
// socket file but refusing one a running daemon answers on.
func listenAPI(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("api socket %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("api socket %s: a %s is there, not a socket; refusing to replace it (remove it or choose another --socket)", path, fileKind(fi))
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("api socket %s: another daemon is running (it answers on the socket)", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("api socket %s: removing a stale socket: %w", path, err)
		}
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("api socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// fileKind names what a non-socket path is, for messages.
func fileKind(fi os.FileInfo) string {
	switch m := fi.Mode(); {
	case m.IsDir():
		return "directory"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m.IsRegular():
		return "regular file"
	default:
		return "special file"
	}
}

// tuneGC gives the daemon's garbage collector a memory limit instead of
// GOGC's proportional pacing (gc_memory_limit): the collector runs when
// the heap nears the limit, so a daemon whose live heap is small collects
// rarely; each collection's pauses and mark work take CPU from the model.
// GOGC or GOMEMLIMIT in the environment leave the runtime as they set it.
func tuneGC(log *zap.Logger, limit int64) {
	if limit <= 0 || os.Getenv("GOMEMLIMIT") != "" || os.Getenv("GOGC") != "" {
		log.Info("garbage collector as the runtime sets it", zap.Int64("gc_memory_limit", limit),
			zap.String("GOGC", os.Getenv("GOGC")), zap.String("GOMEMLIMIT", os.Getenv("GOMEMLIMIT")))
		return
	}
	debug.SetMemoryLimit(limit)
	debug.SetGCPercent(-1)
	log.Info("garbage collector: memory limit instead of GOGC", zap.Int64("gc_memory_limit_bytes", limit))
}

// errNotValid is the error of a --require-valid run that was not
// real-time valid.
var errNotValid = errors.New("the run was not real-time valid (--require-valid)")

// finalReport logs how much of the run was real-time valid and why the
// rest was not; it returns errNotValid if an interval was not valid and
// requireValid is set.
func finalReport(log *zap.Logger, st *emu.Status, requireValid bool) error {
	p := st.Pacer
	var stalls uint64
	for _, h := range st.Hosts {
		stalls += h.LagStalls
	}
	fields := []zap.Field{zap.Float64("valid_fraction", p.ValidFraction), zap.Uint64("intervals", p.Intervals),
		zap.Uint64("invalid", p.Invalid), zap.String("overload", st.Overload), zap.Float64("dilation", p.Dilation),
		zap.Uint64("dilation_raises", p.DilationRaises), zap.Uint64("lag_stalls", stalls)}
	for _, c := range slices.Sorted(maps.Keys(p.InvalidByCause)) {
		fields = append(fields, zap.String("invalid_"+c, fmt.Sprintf("%d: %s", p.InvalidByCause[c], emu.CauseText(c))))
	}
	msg := "real time: every interval valid"
	if p.Invalid > 0 {
		msg = fmt.Sprintf("real time: valid %.1f%% of the time, %d of %d one-second intervals not valid", 100*p.ValidFraction, p.Invalid, p.Intervals)
	}
	if stalls > 0 {
		msg += "; the applications were slowed (backpressure) to keep the model within pacing.max_lag"
	}
	if p.DilationRaises > 0 {
		msg += fmt.Sprintf("; the fabric was slowed to dilation %.3g", p.Dilation)
	}
	if p.Invalid > 0 {
		log.Warn(msg, fields...)
		if requireValid {
			return errNotValid
		}
		return nil
	}
	log.Info(msg, fields...)
	return nil
}

func runDaemon(ctx context.Context, out, errw io.Writer, cfg emu.RunConfig, demo, requireValid bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	log, err := newLogger(cfg, errw)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if err := checkPrivileges(cfg); err != nil {
		return err
	}
	tuneGC(log, cfg.GCMemoryLimit)
	var apiLn net.Listener
	if cfg.API.Socket != "" {
		if apiLn, err = listenAPI(cfg.API.Socket); err != nil {
			return err
		}
		defer os.Remove(cfg.API.Socket)
		defer apiLn.Close()
	}
	var metricsLn net.Listener
	if cfg.Metrics.Enabled {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Metrics.Port))
		if metricsLn, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("metrics on %s: %w", addr, err)
		}
		defer metricsLn.Close()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// The demo says what bounds its throughput: measured on a throwaway
	// copy of the model before the devices exist, so it adds no lag.
	var bound string
	if demo {
		if m, err := cfg.ResolveModel(); err == nil {
			if b, err := emu.MeasureBound(m, 200*time.Millisecond); err == nil {
				bound = b.String()
			}
		}
	}

	e, err := emu.New(cfg, log)
	if err != nil {
		return err
	}
	defer e.Close()
	// The recording is committed once Close has flushed it; a failed run
	// (or a failed write) leaves no half file behind (package outfile).
	var pcapFile *outfile.File
	if cfg.PcapOut != "" {
		if pcapFile, err = outfile.Create(cfg.PcapOut, out); err != nil {
			return fmt.Errorf("pcap_out: %w", err)
		}
		defer func() { _ = e.Close(); pcapFile.Abort() }() // the recorder stops before the file goes
		if err := e.RecordPcap(pcapFile, cfg.PcapOut); err != nil {
			return fmt.Errorf("pcap_out: %w", err)
		}
	}
	if err := e.Start(); err != nil {
		return err
	}
	for _, n := range modelNotes(cfg) {
		log.Info(n.String())
	}
	model := e.Model()
	delivery, routing := model.NIC.Delivery.Effective(model.Routing.Mode)
	log.Info("fabric running", zap.String("preset", cfg.Model.Preset), zap.String("delivery", string(delivery)), zap.String("routing", string(routing)),
		zap.String("link_rate", model.Fabric.LinkRate.String()), zap.Float64("dilation", cfg.Pacing.Dilation),
		zap.Strings("taps", e.Devices()))

	var servers []*http.Server
	if apiLn != nil {
		srv := &http.Server{Handler: emu.NewControlHandler(e.Status, e), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: apiIdleTimeout}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(apiLn) }()
		log.Info("control API listening", zap.String("socket", cfg.API.Socket))
	}
	if metricsLn != nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(emu.NewCollector(e.Status))
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: apiIdleTimeout}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(metricsLn) }()
		log.Info("metrics listening", zap.String("addr", "http://"+metricsLn.Addr().String()+"/metrics"))
	}
	if demo {
		printDemo(out, cfg, bound)
	}

	<-ctx.Done()
	log.Info("stopping: no more frames read; draining the fabric", zap.Duration("timeout", time.Duration(cfg.DrainTimeout)))
	if !e.Drain(time.Duration(cfg.DrainTimeout)) {
		log.Warn("drain timed out; frames still in the fabric are dropped", zap.Int("outstanding_bytes", e.Outstanding()))
	}
	for _, s := range servers {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.Shutdown(sctx)
		cancel()
	}
	st, serr := e.Status()
	if serr == nil && st.PcapOut != nil {
		log.Info("pcapng recording", zap.String("file", cfg.PcapOut), zap.Uint64("written", st.PcapOut.Written), zap.Uint64("overflow", st.PcapOut.Overflow))
	}
	var validErr error
	if serr == nil {
		validErr = finalReport(log, st, requireValid)
	} else if requireValid {
		validErr = fmt.Errorf("--require-valid: no final status: %w", serr)
	}
	if err := e.Close(); err != nil {
		log.Error("cleanup", zap.Error(err))
		return err
	}
	if pcapFile != nil {
		if err := pcapFile.Commit(); err != nil {
			return fmt.Errorf("pcap_out: %w", err)
		}
	}
	log.Info("stopped; devices and namespaces removed")
	return validErr
}

func printDemo(w io.Writer, cfg emu.RunConfig, bound string) {
	fmt.Fprintf(w, "fabemu demo: %d hosts on preset %s\n", len(cfg.TAPs), cfg.Model.Preset)
	if bound != "" {
		fmt.Fprintf(w, "%s\n", bound)
	}
	for _, t := range cfg.TAPs {
		fmt.Fprintf(w, "  %-10s netns %-12s %s\n", t.Name, t.Netns, strings.Join(t.Addrs, " "))
	}
	a, b := cfg.TAPs[0], cfg.TAPs[1]
	ipOf := func(t emu.TAPConfig, i int) string { return strings.SplitN(t.Addrs[i], "/", 2)[0] }
	fmt.Fprintf(w, `
Try:
  ip netns exec %[1]s ping -c 5 %[3]s
  ip netns exec %[1]s ping -6 -c 5 %[4]s
  ip netns exec %[2]s iperf3 -s -D
  ip netns exec %[1]s iperf3 -c %[3]s -t 5
  fabemu stat --socket %[5]s
Stop with Ctrl-C (or SIGTERM): the namespaces and devices are removed.
`, a.Netns, b.Netns, ipOf(b, 0), ipOf(b, 1), cfg.API.Socket)
}

// startCPUProfile starts a CPU profile written to path (none when path is
// empty); the returned stop ends it and commits the file.
func startCPUProfile(path string, stdout io.Writer) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	pf, err := outfile.Create(path, stdout)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Abort()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := pf.Commit(); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}
