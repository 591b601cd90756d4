package emu

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/fabemu/fabemu/emu/qemusock"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"go.uber.org/zap"
)

// Kinds of frame port a taps entry can describe (TAPConfig.Kind).
const (
	// KindTAP is a TAP device the daemon creates (the default).
	KindTAP = "tap"
	// KindQEMUSocket is a socket a stock QEMU attaches a VM's network
	// card to (emu/qemusock): -netdev stream on a unix socket, or
	// -netdev socket on TCP.
	KindQEMUSocket = "qemu-socket"
)

// kind returns the entry's kind, KindTAP when none is given.
func (t TAPConfig) kind() string {
	if t.Kind == "" {
		return KindTAP
	}
	return t.Kind
}

// checkPort validates one taps entry for its kind and returns the MAC
// it configures ("" when the address is left to the kernel or learnt
// from the guest's frames).
func (t TAPConfig) checkPort() (mac string, err error) {
	switch t.kind() {
	case KindTAP:
		if t.Socket != "" {
			return "", fmt.Errorf("socket %q applies to kind %s only (this entry is a TAP device)", t.Socket, KindQEMUSocket)
		}
		tc, err := t.tapConfig()
		if err != nil || tc.MAC == nil {
			return "", err
		}
		return tc.MAC.String(), nil
	case KindQEMUSocket:
		qc, err := t.qemuConfig()
		if err != nil || qc.MAC == (ether.MAC{}) {
			return "", err
		}
		return qc.MAC.String(), nil
	}
	return "", fmt.Errorf("kind %q: want %s (default) or %s", t.Kind, KindTAP, KindQEMUSocket)
}

// qemuConfig turns a qemu-socket entry into the qemusock package's
// config. The TAP-only fields are refused: the guest configures its own
// network, and QEMU's socket back-ends carry no offload header.
func (t TAPConfig) qemuConfig() (qemusock.Config, error) {
	qc := qemusock.Config{Name: t.Name, Addr: t.Socket, MTU: t.MTU, Owner: max(t.Owner, 0)}
	var bad []string
	for _, f := range []struct {
		set  bool
		name string
	}{{t.Netns != "", "netns"}, {t.OwnNetns, "own_netns"}, {len(t.Addrs) > 0, "addrs"},
		{t.Persist, "persist"}, {t.Offload != nil, "offload"}} {
		if f.set {
			bad = append(bad, f.name)
		}
	}
	if len(bad) > 0 {
		return qc, fmt.Errorf("%s: TAP device fields, not for kind %s (the guest configures its own addresses; QEMU's socket back-ends carry no offload header)",
			strings.Join(bad, ", "), KindQEMUSocket)
	}
	if t.Socket == "" {
		return qc, fmt.Errorf("kind %s needs socket: a unix socket path such as /run/fabemu/%s.sock (QEMU 7.2 and later) or ip:port (older QEMU)", KindQEMUSocket, t.Name)
	}
	if t.MAC != "" {
		mac, err := net.ParseMAC(t.MAC)
		if err != nil || len(mac) != 6 {
			return qc, fmt.Errorf("mac %q: want six hex bytes such as 52:54:00:12:34:56", t.MAC)
		}
		qc.MAC = ether.MAC(mac)
	}
	if strings.ContainsAny(t.Name, "/: \t\n\x00") {
		return qc, fmt.Errorf("name %q: no '/', ':' or spaces", t.Name)
	}
	if err := qc.Check(); err != nil {
		return qc, err
	}
	return qc, nil
}

// openQEMUSocket listens on a qemu-socket entry's socket.
func (e *Emulator) openQEMUSocket(p *port) (*qemusock.Port, error) {
	qc, err := p.cfg.qemuConfig()
	if err != nil {
		return nil, fmt.Errorf("taps[%d] %s: %w", p.idx, p.cfg.Name, err)
	}
	qc.TxQueueLen = e.cfg.TxQueue
	qc.DrainTimeout = max(time.Duration(e.cfg.DrainTimeout), time.Second)
	qc.Logger = e.log
	d, err := qemusock.Listen(qc)
	if err != nil {
		return nil, err
	}
	e.log.Info("QEMU socket ready: waiting for the VM", zap.String("port", d.Name()), zap.String("socket", d.Addr()),
		zap.Stringer("mac", d.MAC()), zap.Int("host", p.host))
	return d, nil
}

// IsTAP reports whether the entry is a TAP device (which needs
// CAP_NET_ADMIN) rather than a socket a VM attaches to.
func (t TAPConfig) IsTAP() bool { return t.kind() == KindTAP }

// learntMAC returns the lowest unicast MAC learnt from p's frames, or
// the zero MAC's string if none was (loop goroutine).
func (e *Emulator) learntMAC(p *port) string {
	var best ether.MAC
	found := false
	for m, q := range e.macs {
		if q == p && (!found || bytes.Compare(m[:], best[:]) < 0) {
			best, found = m, true
		}
	}
	return best.String()
}
