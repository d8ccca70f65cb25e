// SPDX-License-Identifier: MIT

package main

import "path/filepath"

// Where the documents the help points to are installed: the Makefile and
// CMake pass their directories (go build -ldflags "-X
// main.docDir=/usr/share/doc/efap2p -X main.dataDir=/usr/share/efap2p -X
// main.includeDir=/usr/include"). Empty in a plain go build: the help
// then names the files of the source tree.
var docDir, dataDir, includeDir string

// sourceDocs are the installed documents' places in the source tree.
var sourceDocs = map[string]string{
	"machine-models.md":        "models/machines/README.md",
	"emulator.md":              "sim/preload/README.md",
	"check-report.schema.json": "docs/check-report.schema.json",
	"efasim.h":                 "sim/preload/efasim.h",
}

// installed returns where a document the help names is: in dir once
// installed, else in the source tree.
func installed(dir, name string) string {
	if dir != "" {
		return filepath.Join(dir, name)
	}
	if p, ok := sourceDocs[name]; ok {
		return p
	}
	return filepath.Join("docs", name)
}

// docFile is one of the documents (operators.md, machine-models.md, ...).
func docFile(name string) string { return installed(docDir, name) }

// dataFile is one of the data files (check-report.schema.json).
func dataFile(name string) string { return installed(dataDir, name) }

// headerFile is an installed header (efasim.h).
func headerFile(name string) string { return installed(includeDir, name) }
