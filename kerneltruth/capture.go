// SPDX-License-Identifier: MIT

package kerneltruth

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/efap2p/efap2p/internal/sysfsdump"
)

// Capture is what a boot wrote to its second serial port (kerneltruth/init):
// the module's report, `efap2p explain --all --json` in the guest, and the
// guest's sysfs dump, each after a "=== NAME" line, then "=== end".
type Capture struct {
	Report *Report
	Guest  []Answer
	Sysfs  sysfsdump.Tree
}

// maxCapture bounds a capture file.
const maxCapture = 64 << 20

// ReadCaptureFile reads a capture. A serial line may turn "\n" into
// "\r\n"; carriage returns are dropped.
func ReadCaptureFile(name string) (*Capture, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if len(data) > maxCapture {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxCapture)
	}
	data = bytes.ReplaceAll(data, []byte("\r"), nil)
	secs := map[string]string{}
	cur := ""
	var b strings.Builder
	ended := false
	for _, l := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(l, "=== "); ok {
			if cur != "" {
				secs[cur] = b.String()
			}
			b.Reset()
			cur = name
			if name == "end" {
				ended = true
				break
			}
			continue
		}
		if cur != "" {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	if !ended {
		return nil, fmt.Errorf("%s: no \"=== end\" line: the guest did not finish (see its console log)", name)
	}
	for _, s := range []string{"kernel", "guest", "sysfs"} {
		if _, ok := secs[s]; !ok {
			return nil, fmt.Errorf("%s: no %q section", name, s)
		}
	}
	c := &Capture{}
	if c.Report, err = ParseReport(strings.NewReader(secs["kernel"])); err != nil {
		return nil, fmt.Errorf("%s: kernel: %w", name, err)
	}
	if c.Guest, err = ReadAnswers(strings.NewReader(secs["guest"])); err != nil {
		return nil, fmt.Errorf("%s: guest: %w", name, err)
	}
	if c.Sysfs, err = sysfsdump.Read(strings.NewReader(secs["sysfs"])); err != nil {
		return nil, fmt.Errorf("%s: sysfs: %w", name, err)
	}
	return c, nil
}
