// SPDX-License-Identifier: MIT
/*
 * A library with 16 MiB of initialised data, as large programs have (model
 * tables, embedded kernels): test_fork during-load loads it, so that work
 * the front does over every loaded object while it loads its core is not
 * over in a few microseconds.
 */
__attribute__((visibility("default"))) char bigdata_blob[16 << 20] = { 1 };
