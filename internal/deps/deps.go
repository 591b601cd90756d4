package deps
import (
 _ "github.com/vishvananda/netlink"
 _ "github.com/vishvananda/netns"
 _ "github.com/gopacket/gopacket"
 _ "github.com/gopacket/gopacket/pcapgo"
 _ "github.com/cilium/ebpf"
 _ "go.uber.org/zap"
 _ "github.com/spf13/cobra"
 _ "gopkg.in/yaml.v3"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "gonum.org/v1/plot"
 _ "golang.org/x/sys/unix"
 _ "golang.org/x/term"
)
