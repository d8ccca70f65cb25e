// SPDX-License-Identifier: MIT

package jobenv

import "strings"

// GDRRequired reports whether aws-ofi-nccl requires GPUDirect RDMA on EC2
// instance type t: there, once libfabric says "no P2P", its endpoint setup
// fails ("GDR disabled on GDR-supported instance type") unless
// OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK=1, and its RDMA protocol (the
// default there from p5 on) asks libfabric for FI_HMEM, which libfabric
// does not offer under FI_HMEM_DISABLE_P2P=1. As aws-ofi-nccl decides it
// from DMI's product_name (src/platform-aws.cpp, its platform table and
// PlatformAWS::config_endpoint, at v1.21.1): p4d.24xlarge,
// p4de.24xlarge, the P series from p5 on (p5.4xlarge aside), g7e.12xlarge
// and larger, Trainium and Inferentia.
func GDRRequired(t string) bool {
	family, size, _ := strings.Cut(t, ".")
	switch {
	case family == "p4d" || family == "p4de":
		return size == "24xlarge"
	case family == "p5" && size == "4xlarge":
		return false
	case strings.HasPrefix(family, "p"):
		gen := 0
		digits := 0
		for _, c := range family[1:] {
			if c < '0' || c > '9' {
				break
			}
			gen = gen*10 + int(c-'0')
			digits++
		}
		return digits > 1 || gen >= 5
	case family == "g7e":
		return size == "12xlarge" || size == "24xlarge" || size == "48xlarge"
	case strings.HasPrefix(family, "trn"), strings.HasPrefix(family, "inf"):
		return true
	}
	return false
}
