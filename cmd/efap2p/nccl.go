package main

import (
	"errors"

	"github.com/efap2p/efap2p/p2p"
)

// exportNCCL writes the NCCL topology XML (placeholder until implemented).
func exportNCCL(o *p2p.Oracle, src *p2p.Sysfs) ([]byte, error) {
	return nil, errors.New("--format nccl is not implemented yet")
}
