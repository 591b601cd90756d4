package params_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/internal/units"
)

// LinkConfig and FabricConfig stand for a model package's config types.
type LinkConfig struct {
	Rate    units.BitRate `yaml:"rate" doc:"link bit rate" paper:"004 §4.1"`
	LengthM float64       `yaml:"length_m" doc:"cable length" unit:"m" paper:"004 §4.1"`
}

type FabricConfig struct {
	BufferBytes units.Bytes `yaml:"buffer_bytes" doc:"input buffer per virtual lane" paper:"004 §4.1"`
	VLs         int         `yaml:"vls" doc:"virtual lanes per link" unit:"lanes"`
	Link        LinkConfig  `yaml:"link"`
}

// Config stands for the top-level config assembled in cmd/fabemu.
type Config struct {
	Fabric FabricConfig `yaml:"fabric"`
}

func Example() {
	cfg := Config{Fabric: FabricConfig{BufferBytes: 8 * units.KiB, VLs: 2, Link: LinkConfig{Rate: 2500 * units.Mbps, LengthM: 20}}}

	file := "fabric:\n  vls: 4\n  bufer_bytes: 4KiB\n"
	fmt.Println(params.DecodeYAML(strings.NewReader(file), "config.yaml", &cfg))

	fmt.Println(params.DecodeYAML(strings.NewReader("fabric:\n  vls: 4\n"), "config.yaml", &cfg))
	fmt.Println(params.Set(&cfg, "fabric.link.rate=10G"))
	fmt.Println(params.Set(&cfg, "fabric.lnk.rate=10G"))

	_ = params.WriteExplain(os.Stdout, params.Explain(cfg))
	out, _ := params.Dump(cfg)
	fmt.Print(string(out))
	// Output:
	// config.yaml:3: unknown key "bufer_bytes" in fabric (did you mean "buffer_bytes"?)
	// <nil>
	// <nil>
	// --set fabric.lnk.rate: unknown key "lnk" in fabric (did you mean "link"?)
	// PARAMETER             DEFAULT  UNIT   TYPE     PAPER     DESCRIPTION
	// fabric.buffer_bytes   8KiB     -      size     004 §4.1  input buffer per virtual lane
	// fabric.vls            4        lanes  int      -         virtual lanes per link
	// fabric.link.rate      10Gbps   -      rate     004 §4.1  link bit rate
	// fabric.link.length_m  20       m      float64  004 §4.1  cable length
	// fabric:
	//   buffer_bytes: 8KiB
	//   vls: 4
	//   link:
	//     rate: 10Gbps
	//     length_m: 20
}
