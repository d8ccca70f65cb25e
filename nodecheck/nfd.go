// SPDX-License-Identifier: MIT

package nodecheck

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// NFDPrefix is the prefix node-feature-discovery gives a label of a
// feature file that names none.
const NFDPrefix = "feature.node.kubernetes.io/"

// WriteNFD writes the report as a node-feature-discovery feature file
// (its local source reads /etc/kubernetes/node-feature-discovery/features.d/):
// one name=value line per label, names without a prefix (NFD adds
// feature.node.kubernetes.io/), values within Kubernetes' label value
// syntax. efa.p2p is true only when the check says ok; a value read from
// the node that is not a valid label value (an instance type from DMI) is
// left out rather than written broken.
func (r *Report) WriteNFD(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# efap2p check: GPUDirect RDMA (docs/operators.md)\n")
	put := func(name, value string) {
		if ValidLabelValue(value) != nil {
			return
		}
		fmt.Fprintf(&b, "%s=%s\n", name, value)
	}
	put("efa.p2p", strconv.FormatBool(r.Status == StatusOK))
	put("efa.p2p.status", string(r.Status))
	put("efa.devices", strconv.Itoa(len(r.NICs)))
	put("efa.accelerators", strconv.Itoa(len(r.Accelerators)))
	local := 0
	for _, a := range r.Accelerators {
		local += len(a.LocalP2P)
	}
	if len(r.Pairs) > 0 {
		put("efa.p2p.local-pairs", strconv.Itoa(local))
	}
	put("efa.instance-type", r.Host.InstanceType)
	_, err := io.WriteString(w, b.String())
	return err
}

// Kubernetes' label syntax (the rules NFD applies to the labels it is
// given): a name is an optional prefix, a DNS subdomain of at most 253
// characters followed by "/", and a name part of 1 to 63 characters,
// alphanumerics with "-", "_" and "." inside; a value is empty or 1 to 63
// characters of the same syntax.
var (
	labelPart   = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	dnsLabel    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	errLabelLen = errors.New("longer than 63 characters")
)

// ValidLabelName checks a label name as Kubernetes and NFD take it:
// [prefix/]name.
func ValidLabelName(s string) error {
	name := s
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		prefix := s[:i]
		name = s[i+1:]
		if prefix == "" || len(prefix) > 253 {
			return fmt.Errorf("label name %q: the prefix must be a DNS subdomain of 1 to 253 characters", s)
		}
		for _, l := range strings.Split(prefix, ".") {
			if len(l) > 63 || !dnsLabel.MatchString(l) {
				return fmt.Errorf("label name %q: the prefix %q is not a DNS subdomain (lower-case alphanumerics and '-', dot-separated)", s, prefix)
			}
		}
	}
	switch {
	case name == "":
		return fmt.Errorf("label name %q: empty name", s)
	case len(name) > 63:
		return fmt.Errorf("label name %q: %w", s, errLabelLen)
	case !labelPart.MatchString(name):
		return fmt.Errorf("label name %q: alphanumerics, '-', '_' and '.' only, starting and ending with an alphanumeric", s)
	}
	return nil
}

// ValidLabelValue checks a label value: empty, or 1 to 63 characters,
// alphanumerics with "-", "_" and "." inside.
func ValidLabelValue(s string) error {
	switch {
	case s == "":
		return nil
	case len(s) > 63:
		return fmt.Errorf("label value %q: %w", s, errLabelLen)
	case !labelPart.MatchString(s):
		return fmt.Errorf("label value %q: alphanumerics, '-', '_' and '.' only, starting and ending with an alphanumeric", s)
	}
	return nil
}

// ParseNFD reads a feature file as NFD's local source does: blank lines
// and # comments skipped, name=value (a name alone is value "true"), the
// default prefix added to names without one. Each label is checked with
// ValidLabelName and ValidLabelValue; the first bad line is an error
// naming it.
func ParseNFD(data string) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			value = "true"
		}
		if !strings.Contains(name, "/") {
			name = NFDPrefix + name
		}
		if err := ValidLabelName(name); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if err := ValidLabelValue(value); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out[name] = value
	}
	return out, nil
}
