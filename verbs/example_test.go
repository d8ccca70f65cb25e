// SPDX-License-Identifier: MIT

package verbs_test

import (
	"fmt"
	"log"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/efap2p/efap2p/sim/simtest"
	"github.com/efap2p/efap2p/verbs"
)

// The examples run inside the emulated p5.48xlarge: 32 EFA NICs, 4 behind
// each of 8 PCIe switches, each switch with one H100.

func ExampleDevices() {
	devs, err := verbs.Devices()
	if err != nil {
		log.Fatal(err)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Name < devs[j].Name })
	fmt.Println(len(devs), "devices")
	for _, d := range devs[:2] {
		pci, err := d.PCIAddr()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d.Name, pci, d.NodeType)
	}
	// Output:
	// 32 devices
	// rdmap113s0 0000:71:00.0 unspecified
	// rdmap114s0 0000:72:00.0 unspecified
}

func ExampleOpen() {
	ctx, err := verbs.Open("rdmap79s0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	pci, err := ctx.PCIAddr()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ctx.Name(), "is", pci)
	// Output: rdmap79s0 is 0000:4f:00.0
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

func ExamplePD_RegDmabufMR() {
	ctx, err := verbs.Open("rdmap79s0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Dealloc()

	const size = 2 << 20
	fd := exportGPUMemory(size)
	defer unix.Close(fd)
	mr, err := pd.RegDmabufMR(0, size, 0, fd, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Dereg()
	fmt.Println("registered", mr.Length(), "bytes of GPU memory")
	// Output: registered 2097152 bytes of GPU memory
}
