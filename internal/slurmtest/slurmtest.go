// Package slurmtest starts a throwaway single-node Slurm cluster for a
// test: munged with its own key and socket, slurmctld and slurmd, all
// configured, logging and keeping state in the test's temporary
// directory, listening on free ports, and stopped when the test ends. The
// client commands (sbatch, squeue, scontrol, scancel) reach it through
// SLURM_CONF, which Env carries.
//
// It needs Debian's slurm-wlm and munge packages and root (slurmd runs
// jobs as their submitting user). Without them the test is skipped with
// the reason; with FABEMU_REQUIRE_PRIV=1 (the project's CI) it fails.
package slurmtest

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/privtest"
)

// Cluster is a running single-node cluster.
type Cluster struct {
	// Dir holds its configuration, state and logs.
	Dir string
	// Conf is its slurm.conf.
	Conf string
	// Node is the node's name (the host name).
	Node string
	// CPUs and MemoryMiB are what the node offers.
	CPUs, MemoryMiB int
}

// Env is the environment of a client command: the process's, with
// SLURM_CONF naming the cluster's configuration.
func (c *Cluster) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.Conf)
}

// Command is a Slurm client command against the cluster.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env()
	return cmd
}

// tools are the programs the cluster needs.
var tools = []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"}

func skip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(privtest.EnvRequire) == "1" {
		t.Fatalf("%s (%s=1: a single-node Slurm cluster must start here)", msg, privtest.EnvRequire)
	}
	t.Skip(msg)
}

// freePort asks the kernel for an unused TCP port.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts a cluster of one node with cpus CPUs and memMiB MiB of
// memory, or skips t (see the package comment). The daemons stop when t
// ends.
func Start(t testing.TB, cpus, memMiB int) *Cluster {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			skip(t, "%s not found: install slurm-wlm and munge for the Slurm tests", tool)
		}
	}
	if os.Geteuid() != 0 {
		skip(t, "the Slurm tests run slurmd, which needs root (effective uid %d)", os.Geteuid())
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	// munged checks that no directory above its socket is writable by
	// others; t.TempDir lives under the sticky /tmp, which it accepts
	dir, err := os.MkdirTemp("", "slurmtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Node: host, CPUs: cpus, MemoryMiB: memMiB}
	for _, d := range []string{"munge", "state", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	rand.Read(key)
	keyFile := filepath.Join(dir, "munge", "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "munge", "munge.socket")
	start := func(name string, args ...string) {
		t.Helper()
		log, err := os.Create(filepath.Join(dir, name+".out"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second): // a daemon that ignores SIGINT
				cmd.Process.Kill()
				<-done
			}
			log.Close()
		})
	}
	start("munged", "--foreground", "--force", "--key-file="+keyFile, "--socket="+sock,
		"--pid-file="+filepath.Join(dir, "munge", "munged.pid"), "--log-file="+filepath.Join(dir, "munge", "munged.log"),
		"--seed-file="+filepath.Join(dir, "munge", "munged.seed"))
	if err := waitFor(func() bool { _, err := os.Stat(sock); return err == nil }); err != nil {
		t.Fatalf("munged did not create its socket: %v\n%s", err, c.Log("munged.out", "munge/munged.log"))
	}
	conf := fmt.Sprintf(`# a throwaway single-node cluster (internal/slurmtest)
ClusterName=fabemutest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[4]s
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd.pid
SlurmctldLogFile=%[5]s/slurmctld.log
SlurmdLogFile=%[5]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
MinJobAge=3600
KillWait=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[6]d RealMemory=%[7]d State=UNKNOWN
PartitionName=test Nodes=%[1]s Default=YES MaxTime=INFINITE State=UP
`, host, freePort(t), freePort(t), sock, dir, cpus, memMiB)
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	start("slurmctld", "-D", "-i", "-f", c.Conf)
	start("slurmd", "-D", "-f", c.Conf)
	err = waitFor(func() bool {
		out, err := c.Command("sinfo", "-h", "-N", "-o", "%T").Output()
		s := strings.TrimSpace(string(out))
		return err == nil && (s == "idle" || s == "mixed" || s == "allocated")
	})
	if err != nil {
		t.Fatalf("the node did not come up: %v\n%s", err, c.Log("slurmctld.out", "slurmctld.log", "slurmd.out", "slurmd.log"))
	}
	return c
}

// Log returns the named files of the cluster's directory, for a failure
// message.
func (c *Cluster) Log(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		data, _ := os.ReadFile(filepath.Join(c.Dir, n))
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", n, data)
	}
	return b.String()
}

// waitFor polls ok for up to a minute (daemons starting on a loaded
// machine; a hang, not a timing check).
func waitFor(ok func() bool) error {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if ok() {
			return nil
		}
	}
	return fmt.Errorf("not within a minute")
}
