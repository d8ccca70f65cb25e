// SPDX-License-Identifier: MIT

package efadv_test

import (
	"fmt"
	"log"

	"golang.org/x/sys/unix"

	"github.com/efap2p/efap2p/efadv"
	"github.com/efap2p/efap2p/p2p"
	"github.com/efap2p/efap2p/sim/simtest"
	"github.com/efap2p/efap2p/verbs"
)

// The examples run inside the emulated p5.48xlarge: 32 EFA NICs, 4 behind
// each of 8 PCIe switches, each switch with one H100.

func ExampleQueryDevice() {
	ctx, err := verbs.Open("rdmap79s0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	attr, err := efadv.QueryDevice(ctx)
	if err != nil {
		log.Fatal(err) // EOPNOTSUPP: not an EFA device
	}
	fmt.Println("max_sq_wr:", attr.MaxSQWR)
	fmt.Println("RDMA read:", attr.Caps.Has(efadv.CapRDMARead))
	fmt.Println("P2P DMA into an accelerator:", attr.Caps.Has(efadv.CapP2PDMA))
	// Output:
	// max_sq_wr: 4096
	// RDMA read: true
	// P2P DMA into an accelerator: true
}

func ExampleQueryP2P() {
	ctx, err := verbs.Open("rdmap79s0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	v, err := efadv.QueryP2P(ctx, p2p.MustParseAddr("0000:53:00.0"))
	if err != nil {
		log.Fatal(err)
	}
	// what the NIC gets, and by which registration paths (dma-buf, and the
	// out-of-tree EFA driver's peer memory); v.Outcome is the dma-buf path's
	fmt.Println(v.MapType, v.Distance, v.Path, v.Effective(), v.Via(), v.Policy)

	// A GPU behind another switch, on the other socket.
	v, err = efadv.QueryP2P(ctx, p2p.MustParseAddr("0000:ca:00.0"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.MapType, v.Path, v.Outcome)
	// Output:
	// BUS_ADDR 4 PIX p2p dma-buf+peer-memory nvidia
	// THRU_HOST_BRIDGE SYS p2p
}

func ExampleQueryP2PDmabuf() {
	ctx, err := verbs.Open("rdmap79s0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	fd := exportGPUMemory(2 << 20)
	defer unix.Close(fd)
	d, err := efadv.QueryP2PDmabuf(ctx, fd)
	if err != nil {
		log.Fatal(err) // p2p.ErrSystemMemory: no peer to judge
	}
	fmt.Println("exporter:", d.Exporter, "with", len(d.Candidates), "candidate GPUs")
	fmt.Println("best:", d.Best.Provider, d.Best.Outcome)
	// Output:
	// exporter: nvidia with 8 candidate GPUs
	// best: 0000:53:00.0 p2p
}

// exportGPUMemory stands for the GPU runtime's dma-buf export (with CUDA,
// cuMemGetHandleForAddressRange); here the emulator makes one owned by
// the H100 at 0000:53:00.0.
func exportGPUMemory(size uint64) int {
	fd, err := simtest.Dmabuf("0000:53:00.0", "", size)
	if err != nil {
		log.Fatal(err)
	}
	return fd
}
