// SPDX-License-Identifier: MIT

package nccltopo_test

import (
	"bufio"
	"bytes"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/efap2p/efap2p/models"
	"github.com/efap2p/efap2p/nccltopo"
	"github.com/efap2p/efap2p/p2p"
)

// An NCCL_TOPO_FILE for p5.48xlarge, here written as a sysfs tree by
// package models (on a host: p2p.SysfsRoot(), and run as root so that every
// verdict is certain). The example prints the first switch of the file:
// its upstream port holds the GPU and four EFA NICs directly, as NCCL reads
// sysfs, and every one of them has gdr="1".
func ExampleMarshal() {
	m, err := models.Builtin("p5.48xlarge")
	if err != nil {
		log.Fatal(err)
	}
	root, err := os.MkdirTemp("", "nccltopo-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	if err := m.Write(root, models.WriteOptions{}); err != nil {
		log.Fatal(err)
	}
	src, err := p2p.OpenSysfs(root)
	if err != nil {
		log.Fatal(err)
	}
	o := p2p.NewOracleWith(p2p.NewTopology(src), p2p.Options{Kernel: p2p.MustParseRelease("6.8.0-1015-aws")})
	data, err := nccltopo.Marshal(o, src, nccltopo.Options{Model: m.Name})
	if err != nil {
		log.Fatal(err) // nccltopo.ErrUncertain without root
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	in := false
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, `<pci busid="0000:45:00.0"`):
			in = true
		case in && strings.HasPrefix(l, "<gpu"), in && strings.HasPrefix(l, "<net"):
			fmt.Println(l)
		case in && strings.HasPrefix(l, `<pci busid="0000:56:00.0"`):
			return
		}
	}
	// Output:
	// <net name="rdmap79s0" dev="0" speed="100000" port="1" latency="0" guid="0x4f00" maxconn="131072" gdr="1"/>
	// <net name="rdmap80s0" dev="1" speed="100000" port="1" latency="0" guid="0x5000" maxconn="131072" gdr="1"/>
	// <net name="rdmap81s0" dev="2" speed="100000" port="1" latency="0" guid="0x5100" maxconn="131072" gdr="1"/>
	// <net name="rdmap82s0" dev="3" speed="100000" port="1" latency="0" guid="0x5200" maxconn="131072" gdr="1"/>
	// <gpu dev="0" sm="90" rank="0" gdr="1"/>
}

func ExamplePathType() {
	for _, c := range []p2p.PathClass{p2p.PathPIX, p2p.PathPXB, p2p.PathPHB, p2p.PathNODE, p2p.PathSYS} {
		fmt.Printf("%s:%s ", c, nccltopo.PathType(c))
	}
	fmt.Println()
	// Output:
	// PIX:PIX PXB:PXB PHB:PHB NODE:PHB SYS:SYS
}
