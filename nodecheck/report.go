// SPDX-License-Identifier: MIT

package nodecheck

import "github.com/efap2p/efap2p/p2p"

// Report format: what `efap2p check --json` prints. docs/check-report.schema.json
// is its JSON Schema; field names are stable within a version, and a
// version only ever adds fields.
const (
	ReportFormat  = "efap2p-check"
	ReportVersion = 1
)

// Status is the node's overall answer.
type Status string

// The statuses, with the exit status `efap2p check` gives each.
const (
	StatusOK       Status = "ok"       // exit 0: every accelerator has true P2P with its local EFA NICs, no finding
	StatusDegraded Status = "degraded" // exit 1: at least one finding of severity error or warning
	StatusUnknown  Status = "unknown"  // exit 3: only findings of severity unknown: the check could not tell
	// StatusNotApplicable: exit 0, healthy to every engine: the node has
	// no EFA device or no accelerator (a CPU node), nothing differs from
	// its instance type's model, and nothing is in the way.
	StatusNotApplicable Status = "not-applicable"
)

// ExitCode returns the exit status `efap2p check` gives the status: 0, 1
// or 3 (2 is for bad usage).
func (s Status) ExitCode() int {
	switch s {
	case StatusOK, StatusNotApplicable:
		return 0
	case StatusDegraded:
		return 1
	}
	return 3
}

// Value is the status as efap2p_check_status reports it: 0 ok, 1
// degraded, 2 not applicable, 3 could not tell.
func (s Status) Value() int {
	switch s {
	case StatusOK:
		return 0
	case StatusDegraded:
		return 1
	case StatusNotApplicable:
		return 2
	}
	return 3
}

// Severity ranks a finding.
type Severity string

// The severities.
const (
	// SeverityError: P2P does not work where it should (a pair refused, a
	// device or module missing, a layout that differs from the model).
	SeverityError Severity = "error"
	// SeverityWarning: it works, but not as it should (bounced through
	// system memory, one registration path missing).
	SeverityWarning Severity = "warning"
	// SeverityUnknown: the check could not tell (verdicts it cannot vouch
	// for).
	SeverityUnknown Severity = "unknown"
)

// Report is the node check's answer: the host, every accelerator and EFA
// NIC, every (accelerator, EFA NIC) pair, the comparison with the instance
// type's model, and the findings, each with its fix.
type Report struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Status  Status `json:"status"`
	// ExitCode is the exit status `efap2p check` gives this report.
	ExitCode int `json:"exit_code"`
	// Summary is the one-line answer (the line mode's message).
	Summary string `json:"summary"`
	// ToolVersion is the efap2p version that checked (set by the caller).
	ToolVersion string `json:"tool_version,omitempty"`
	// NotApplicable says why GPUDirect RDMA does not apply to the node
	// (status not-applicable, or degraded by a layout finding): no EFA
	// device, no accelerator; nil when it applies.
	NotApplicable *NotApplicable `json:"not_applicable,omitempty"`
	Host          Host           `json:"host"`
	Accelerators  []Accelerator  `json:"accelerators"`
	NICs          []NIC          `json:"nics"`
	Pairs         []Pair         `json:"pairs"`
	// Expected is the comparison with a machine model: the instance
	// type's (DMI) or the one asked for; nil when there is none.
	Expected *Expected `json:"expected,omitempty"`
	Findings []Finding `json:"findings"`
	// Notes are facts worth knowing that are not problems.
	Notes []string `json:"notes"`
}

// NotApplicable is why GPUDirect RDMA does not apply to a node.
type NotApplicable struct {
	// Code is no-efa-device (also when there is no accelerator either) or
	// no-accelerator.
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Host is what the check read about the machine itself.
type Host struct {
	// SysfsRoot is the sysfs tree read ("/sys" on a real host).
	SysfsRoot string `json:"sysfs_root"`
	// SysVendor and ProductName are the DMI identity ("" when unreadable);
	// InstanceType is ProductName on EC2 (sys_vendor "Amazon EC2").
	SysVendor    string `json:"sys_vendor"`
	ProductName  string `json:"product_name"`
	InstanceType string `json:"instance_type,omitempty"`
	// Kernel is the release judged: the running kernel's, or the one
	// asked for (KernelSource "running", "option" or "environment":
	// $EFAP2P_KERNEL).
	Kernel       string `json:"kernel"`
	KernelSource string `json:"kernel_source"`
	// DMABuf says whether the kernel and the EFA driver register dma-buf
	// memory (ibv_reg_dmabuf_mr), and why not.
	DMABuf DMABufSupport `json:"dmabuf"`
	// KernelP2PDMA is whether that kernel is built with PCI_P2PDMA, and
	// where that was read (the oracle's p2p.KernelConfig).
	KernelP2PDMA p2p.KernelConfig `json:"kernel_p2pdma"`
	// EFADriver is the EFA driver in use.
	EFADriver EFADriver `json:"efa_driver"`
	// Modules are the modules the paths need, loaded or not; nil when the
	// tree has no module/ directory (state unknown).
	Modules []Module `json:"modules"`
	// TopologyFile is the topology file given to the oracle ("" none);
	// TopologyFileError says why it is not used.
	TopologyFile      string `json:"topology_file,omitempty"`
	TopologyFileError string `json:"topology_file_error,omitempty"`
	// Sources counts the pairs' verdicts by source (topology-file, acpi,
	// computed).
	Sources map[string]int `json:"sources"`
}

// DMABufSupport is whether dma-buf registration of accelerator memory can
// work on this kernel with this EFA driver.
type DMABufSupport struct {
	// Judged is false when the check had nothing to judge it for (no EFA
	// device or no accelerator); Supported is then false.
	Judged    bool   `json:"judged"`
	Supported bool   `json:"supported"`
	Reason    string `json:"reason"`
}

// EFA driver kinds.
const (
	DriverInTree    = "in-tree"     // the kernel's drivers/infiniband/hw/efa
	DriverOutOfTree = "out-of-tree" // AWS's amzn-drivers efa (DKMS, EFA installer)
	DriverNone      = "none"        // no EFA NIC has a driver bound
	DriverUnknown   = "unknown"     // bound, but module state cannot be read
)

// EFADriver is the EFA driver in use and its peer-memory provider.
type EFADriver struct {
	Kind    string `json:"kind"`
	Version string `json:"version,omitempty"`
	// PeerMemory is the out-of-tree driver's p2p attribute: the provider
	// that registers accelerator memory by virtual address ("NVIDIA",
	// "NVIDIA peermem", "NEURON", "" none); nil without the attribute.
	PeerMemory *string `json:"peer_memory,omitempty"`
	// Evidence says how the kind was told.
	Evidence string `json:"evidence"`
}

// Module is one kernel module a registration path needs.
type Module struct {
	Name      string `json:"name"`
	Loaded    bool   `json:"loaded"`
	Version   string `json:"version,omitempty"`
	OutOfTree bool   `json:"out_of_tree,omitempty"`
}

// Accelerator is one GPU or accelerator and its P2P with the EFA NICs.
type Accelerator struct {
	// Name is GPU<n> (class 03) or ACC<n> (class 12), in address order, as
	// `efap2p topo` names them.
	Name     string   `json:"name"`
	Addr     p2p.Addr `json:"addr"`
	Vendor   string   `json:"vendor"`
	Device   string   `json:"device"`
	Driver   string   `json:"driver"`
	NUMANode int      `json:"numa_node"`
	// LocalNICs are its nearest EFA NICs (the shortest path class among
	// them, LocalPath: PIX for the NICs on its PCIe switch).
	LocalNICs []p2p.Addr    `json:"local_nics"`
	LocalPath p2p.PathClass `json:"local_path"`
	// P2PNICs are the EFA NICs it has true P2P with; LocalP2P those of
	// them that are local.
	P2PNICs  []p2p.Addr `json:"p2p_nics"`
	LocalP2P []p2p.Addr `json:"local_p2p_nics"`
	// Certain is false when an answer about it is uncertain.
	Certain bool `json:"certain"`
}

// NIC is one EFA NIC.
type NIC struct {
	Addr     p2p.Addr `json:"addr"`
	IBDev    string   `json:"ibdev"`
	Uverbs   string   `json:"uverbs"`
	Driver   string   `json:"driver"`
	NUMANode int      `json:"numa_node"`
	// Device is the PCI device ID ("efa1").
	Device string `json:"device"`
	// Ports are the RDMA device's ports and their state.
	Ports []Port `json:"ports"`
	// Userspace is whether libibverbs lists the device (its provider,
	// libefa, claims it): "listed", "unlisted", or "" not checked.
	Userspace string `json:"userspace,omitempty"`
}

// Port is one port of an EFA device, as ib_core reports it.
type Port struct {
	Num int `json:"num"`
	// State is the logical state ("ACTIVE", "DOWN", "INIT"; "" when
	// unreadable); PhysState the physical one ("LinkUp", "Disabled").
	State     string `json:"state"`
	PhysState string `json:"phys_state,omitempty"`
}

// Active reports whether the port carries traffic.
func (p Port) Active() bool { return p.State == "ACTIVE" || p.State == "ACTIVE_DEFER" }

// Userspace values.
const (
	UserspaceListed   = "listed"
	UserspaceUnlisted = "unlisted"
)

// Pair is one (accelerator, EFA NIC) pair: the NIC DMAs into the
// accelerator's memory. Each registration path has its own answer; P2P is
// true when one of them gives true P2P.
type Pair struct {
	Accelerator p2p.Addr      `json:"accelerator"`
	NIC         p2p.Addr      `json:"nic"`
	Path        p2p.PathClass `json:"path"`
	Local       bool          `json:"local"`
	P2P         bool          `json:"p2p"`
	// Via lists the registration paths that give the pair true P2P
	// ("dma-buf", "peer-memory"; empty without P2P), as p2p.Verdict.Via
	// does where nothing on the node blocks a path.
	Via p2p.Registration `json:"p2p_via"`
	// Certain is false when the answer rests on something that could not
	// be read (config space without root) or was not evaluated.
	Certain bool `json:"certain"`
	// DMABuf is the dma-buf path: ibv_reg_dmabuf_mr through p2pdma and the
	// exporter's rule (the oracle's verdict).
	DMABuf PathAnswer `json:"dmabuf"`
	// PeerMemory is the out-of-tree driver's peer-memory path
	// (ibv_reg_mr on the accelerator's address, through the provider its
	// p2p attribute names); nil with the in-tree driver.
	PeerMemory *PathAnswer `json:"peer_memory,omitempty"`
}

// Outcomes of a registration path, beyond p2p.Outcome's p2p, bounced and
// refused.
const (
	// OutcomeUnavailable: the path cannot be used on this node (kernel too
	// old, no provider, no exporter driver); Blocked names why.
	OutcomeUnavailable = "unavailable"
	// OutcomeUndecided: the path is available, and this build has no
	// per-pair rule for it.
	OutcomeUndecided = "undecided"
)

// PathAnswer is one registration path's answer for a pair.
type PathAnswer struct {
	// Outcome is p2p, bounced, refused, unavailable or undecided.
	Outcome string `json:"outcome"`
	// Provider is the peer-memory provider (peer-memory path only).
	Provider string `json:"provider,omitempty"`
	// The oracle's verdict (dma-buf path): the kernel's map type and
	// distance, the rule and the exporter's policy, the source, why, and
	// the kernel's own hint.
	MapType  string `json:"map_type,omitempty"`
	Distance *int   `json:"distance,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Policy   string `json:"policy,omitempty"`
	Source   string `json:"source,omitempty"`
	Certain  bool   `json:"certain"`
	// Assumed is set where the map type and distance are the kernel-safe
	// branch, not the kernel's own (what decides them, such as ACS state
	// without root, could not be read: p2p.Verdict.Exact is false); the
	// outcome may be certain still. A topology file needs them exact.
	Assumed bool   `json:"assumed,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Hint    string `json:"hint,omitempty"`
	// Blocked lists the codes of the findings that make the path
	// unavailable.
	Blocked []string `json:"blocked,omitempty"`
}

// Expected is the comparison of the machine with a machine model.
type Expected struct {
	Model string `json:"model"`
	// Source is "dmi" (the instance type named a built-in model) or
	// "option" (asked for).
	Source       string `json:"source"`
	Accelerators int    `json:"accelerators"`
	EFADevices   int    `json:"efa_devices"`
	// FoundAccelerators and FoundEFADevices count what the machine has;
	// MatchingAccelerators and MatchingEFADevices how many of them are
	// at the model's addresses.
	FoundAccelerators    int `json:"found_accelerators"`
	FoundEFADevices      int `json:"found_efa_devices"`
	MatchingAccelerators int `json:"matching_accelerators"`
	MatchingEFADevices   int `json:"matching_efa_devices"`
	// LocalNICs lists, for each accelerator of the model, the EFA NICs it
	// should have true P2P with (its local ones).
	LocalNICs []ExpectedLocal `json:"local_nics"`
	// DevicesMatch is true when the machine has exactly the model's
	// accelerators and EFA devices; Match when, besides, every expected
	// local pair has true P2P.
	DevicesMatch bool `json:"devices_match"`
	Match        bool `json:"match"`
}

// ExpectedLocal is one accelerator's expected local NICs.
type ExpectedLocal struct {
	Accelerator p2p.Addr      `json:"accelerator"`
	Path        p2p.PathClass `json:"path"`
	NICs        []p2p.Addr    `json:"nics"`
	// Missing are those of NICs without true P2P on this machine.
	Missing []p2p.Addr `json:"missing"`
}

// Finding is one thing in the way, with what to do about it.
type Finding struct {
	// Code names the kind of finding (stable: "efa-devices-missing",
	// "p2p-refused", ... see docs/operators.md).
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	// Subjects are the PCI functions concerned (may be empty).
	Subjects []p2p.Addr `json:"subjects"`
	Message  string     `json:"message"`
	// Reason is the oracle's explanation, where a verdict is behind it.
	Reason string `json:"reason,omitempty"`
	Fix    string `json:"fix"`
}
