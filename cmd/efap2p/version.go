// SPDX-License-Identifier: MIT

package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() {
	register(&command{name: "version", summary: "print the version (also: efap2p --version)", run: runVersion})
}

// version is set when the tool is built from the source tree: the Makefile
// and CMake pass the VERSION file's, as
// go build -ldflags "-X main.version=1.0.0". The library, its pkg-config
// file and the Debian packages carry the same number.
var version string

// toolVersion is the tool's version: the one set at build time, else the
// module's (go install github.com/efap2p/efap2p/cmd/efap2p@v1.0.0), else
// "devel".
func toolVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	return "devel"
}

// commit is the commit the binary was built from, for builds without the
// VCS stamp of go build (a Debian package is built from a copy of the
// tree, without .git): the Makefile passes it, as
// -X main.commit=0123abcd...[+modified].
var commit string

// buildLine says how the binary was built: Go release, platform and the
// commit (go build's VCS stamp, else the one the Makefile passed).
func buildLine() string {
	s := fmt.Sprintf("built with %s for %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	var rev, modified string
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" && commit != "" {
		var dirty bool
		if rev, dirty = strings.CutSuffix(commit, "+modified"); dirty {
			modified = ", modified"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += ", commit " + rev + modified
	}
	return s
}

const versionUsage = `Usage: efap2p version
       efap2p --version

Print the version of efap2p (the same as the library's, libefap2p.so.1,
and the packages'), then how this binary was built.

`

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := parseFlags(fs, args, versionUsage, stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("takes no arguments")
	}
	fmt.Fprintf(stdout, "efap2p %s\n%s\n", toolVersion(), buildLine())
	return nil
}
