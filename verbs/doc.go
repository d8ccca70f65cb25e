// SPDX-License-Identifier: MIT

// Package verbs gives Go programs the parts of libibverbs that efap2p
// needs: the device list, contexts, protection domains, dma-buf and
// ordinary memory registration, and each device's PCI function.
//
// # Loading
//
// libibverbs.so.1 is opened at run time with purego (dlopen, RTLD_NOW |
// RTLD_GLOBAL), once per process, on the first call; the package needs no
// cgo and builds with CGO_ENABLED=0. The library loads its providers
// (libefa for EFA devices) as usual. When it is not installed, every
// function returns an error wrapping ErrNoLibrary (Load reports it
// early). ibv_reg_dmabuf_mr needs rdma-core 34 or later.
//
// Devices are found where libibverbs finds them: the sysfs tree at
// $SYSFS_PATH, else /sys. In a secure-execution program (setuid, setgid,
// file capabilities) the variable, and rdma-core's others that redirect
// what libibverbs reads or loads, are removed before it is loaded: /sys.
// A device's PCI function is the target of class/infiniband/<name>/device
// in that tree.
//
// # Errors
//
// Failures of libibverbs come back as errors wrapping its errno, so that
// errors.Is(err, syscall.EOPNOTSUPP) and the like work: errno is read
// through libc's __errno_location on the thread that made the call, for
// functions that return a pointer, and taken from the return value for
// those that return an int. A host without RDMA support, where
// libibverbs answers ENOSYS, and a device name that is not there give
// errors wrapping ErrNoDevice.
//
// # Handles and threads
//
// A Context, its PDs and its MRs are safe for concurrent use. Closing one
// twice, or using it after Close (Dealloc, Dereg), returns an error
// wrapping ErrClosed and never reaches the library. Context.Close waits
// for calls in progress, then deregisters the MRs and deallocates the PDs
// still open, then closes the device. Calls into the library run on the
// calling goroutine's thread (each costs a few hundred nanoseconds
// through purego); none of them blocks for long.
package verbs
