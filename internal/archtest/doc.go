// SPDX-License-Identifier: MIT

// Package archtest holds the test that keeps the house as
// docs/architecture.md draws it: every package of the module has a row in
// its arrows table, imports only what its row allows, and never reaches
// what the second table forbids; no file of cmd/efap2p is longer than 250
// lines.
package archtest
