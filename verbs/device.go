// SPDX-License-Identifier: MIT

package verbs

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/efap2p/efap2p/abi"
	"github.com/efap2p/efap2p/internal/dl"
	"github.com/efap2p/efap2p/p2p"
)

// NodeType is enum ibv_node_type.
type NodeType int32

// Node types (IBV_NODE_*). EFA devices are NodeUnspecified.
const (
	NodeUnknown     NodeType = -1
	NodeCA          NodeType = 1
	NodeSwitch      NodeType = 2
	NodeRouter      NodeType = 3
	NodeRNIC        NodeType = 4
	NodeUSNIC       NodeType = 5
	NodeUSNICUDP    NodeType = 6
	NodeUnspecified NodeType = 7
)

var nodeNames = map[NodeType]string{
	NodeUnknown: "unknown", NodeCA: "CA", NodeSwitch: "switch", NodeRouter: "router",
	NodeRNIC: "RNIC", NodeUSNIC: "usNIC", NodeUSNICUDP: "usNIC UDP", NodeUnspecified: "unspecified",
}

// String returns the name ibv_node_type_str gives.
func (n NodeType) String() string {
	if s, ok := nodeNames[n]; ok {
		return s
	}
	return fmt.Sprintf("NodeType(%d)", int32(n))
}

// TransportType is enum ibv_transport_type.
type TransportType int32

// Transport types (IBV_TRANSPORT_*). EFA devices are TransportUnspecified.
const (
	TransportUnknown     TransportType = -1
	TransportIB          TransportType = 0
	TransportIWARP       TransportType = 1
	TransportUSNIC       TransportType = 2
	TransportUSNICUDP    TransportType = 3
	TransportUnspecified TransportType = 4
)

var transportNames = map[TransportType]string{
	TransportUnknown: "unknown", TransportIB: "InfiniBand", TransportIWARP: "iWARP",
	TransportUSNIC: "usNIC", TransportUSNICUDP: "usNIC UDP", TransportUnspecified: "unspecified",
}

// String names the transport.
func (t TransportType) String() string {
	if s, ok := transportNames[t]; ok {
		return s
	}
	return fmt.Sprintf("TransportType(%d)", int32(t))
}

// Device describes an RDMA device as libibverbs lists it (struct
// ibv_device), copied into Go memory.
type Device struct {
	// Name is the verbs device name ("rdmap79s0").
	Name string
	// KernelName is the name of the device's uverbs node ("uverbs0").
	KernelName string
	// DevPath is the sysfs directory of the uverbs node, IBDevPath the
	// one of the device, both under the sysfs root libibverbs read.
	DevPath   string
	IBDevPath string
	NodeType  NodeType
	Transport TransportType
}

// PCIAddr returns the PCI function of the device: the target of
// class/infiniband/<name>/device under the sysfs root libibverbs reads
// ($SYSFS_PATH, else /sys). A device without one (rxe, siw) gives an error
// wrapping p2p.ErrNotPCI.
func (d Device) PCIAddr() (p2p.Addr, error) { return pciAddr(d.Name) }

func pciAddr(name string) (p2p.Addr, error) {
	s, err := sysfs()
	if err != nil {
		return p2p.Addr{}, fmt.Errorf("verbs: PCI address of %s: %w", name, err)
	}
	a, err := s.RDMADevice(name)
	if err != nil {
		return p2p.Addr{}, fmt.Errorf("verbs: PCI address: %w", err)
	}
	return a, nil
}

func deviceFrom(p uintptr) Device {
	d := (*abi.IBVDevice)(dl.Ptr(p))
	return Device{
		Name:       dl.CBytes(d.Name[:]),
		KernelName: dl.CBytes(d.DevName[:]),
		DevPath:    dl.CBytes(d.DevPath[:]),
		IBDevPath:  dl.CBytes(d.IBDevPath[:]),
		NodeType:   NodeType(d.NodeType),
		Transport:  TransportType(d.TransportType),
	}
}

// deviceList calls ibv_get_device_list and returns the list and its
// entries; the caller frees the list.
func deviceList(f *fns) (uintptr, []uintptr, error) {
	num := new(int32)
	list, errno := dl.CallErrno(f.getDeviceList, uintptr(unsafe.Pointer(num)))
	if list == 0 {
		err := dl.ErrnoOrEIO(errno)
		if errors.Is(err, syscall.ENOSYS) {
			// libibverbs' word for a kernel without RDMA (no uverbs)
			return 0, nil, fmt.Errorf("verbs: %w: the kernel has no RDMA support (ibv_get_device_list: %w)", ErrNoDevice, err)
		}
		return 0, nil, callErr("ibv_get_device_list", err)
	}
	n := int(*num)
	if n < 0 {
		n = 0
	}
	return list, unsafe.Slice((*uintptr)(dl.Ptr(list)), n), nil
}

// Devices returns the RDMA devices libibverbs finds, in its order. A host
// without RDMA support gives an error wrapping ErrNoDevice (and
// libibverbs' ENOSYS); no library, an error wrapping ErrNoLibrary.
func Devices() ([]Device, error) {
	f, err := loadFns()
	if err != nil {
		return nil, err
	}
	list, ptrs, err := deviceList(f)
	if err != nil {
		return nil, err
	}
	out := make([]Device, 0, len(ptrs))
	for _, p := range ptrs {
		out = append(out, deviceFrom(p))
	}
	dl.Call(f.freeDeviceList, list)
	return out, nil
}
