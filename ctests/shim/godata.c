// SPDX-License-Identifier: MIT
/*
 * A library with no Go runtime that carries what a Go executable carried as
 * data holds in memory: its build info's head (magic, pointer size, flags,
 * version), 16-byte aligned, in initialised writable data. test_host
 * with-lib loads it: a Go runtime is told from an object's sections and
 * notes on disk, so this one is not taken for one.
 */
__attribute__((visibility("default"), aligned(16))) char godata_blob[64] =
	"\xff Go buildinf:\x08\x02\x00\x00\x00\x00\x08go1.26.0";
