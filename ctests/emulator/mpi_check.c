// SPDX-License-Identifier: MIT
/*
 * An MPI program for the emulated EFA fabric: a ping-pong between ranks 0
 * and 1 at sizes from 1 byte to 4 MiB, every byte checked, and an
 * Allreduce of every rank's data over all ranks, checked against the sum
 * worked out locally. Prints one line per size (rank 0) and exits 0 when
 * every check passed.
 *
 * Built with mpicc (Open MPI); run under mpirun inside `efap2p sim`.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXSZ (4u << 20)
#define ITERS 20
#define NREDUCE 65536

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131u + seed * 7u + (i >> 9));
}

int main(int argc, char **argv)
{
	int rank, size, fails = 0, peer, it;
	uint8_t *buf, *want;
	size_t sz;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		if (!rank)
			fprintf(stderr, "mpi_check: needs 2 ranks or more\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(MAXSZ);
	want = malloc(MAXSZ);
	if (!buf || !want)
		MPI_Abort(MPI_COMM_WORLD, 2);
	peer = rank == 0 ? 1 : 0;
	for (sz = 1; sz <= MAXSZ; sz *= 4) {
		double t0 = MPI_Wtime();

		for (it = 0; it < ITERS && rank < 2; it++) {
			unsigned int seed = (unsigned int)(sz + (size_t)it);

			if (rank == 0) {
				fill(buf, sz, seed);
				MPI_Send(buf, (int)sz, MPI_BYTE, peer, it, MPI_COMM_WORLD);
				MPI_Recv(buf, (int)sz, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				fill(want, sz, seed + 1);
				if (memcmp(buf, want, sz)) {
					fprintf(stderr, "FAIL ping-pong: %zu bytes, round %d: wrong data\n", sz, it);
					fails++;
				}
			} else {
				MPI_Recv(buf, (int)sz, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				fill(want, sz, seed);
				if (memcmp(buf, want, sz)) {
					fprintf(stderr, "FAIL ping-pong: %zu bytes, round %d: rank 1 got wrong data\n",
						sz, it);
					fails++;
				}
				fill(buf, sz, seed + 1);
				MPI_Send(buf, (int)sz, MPI_BYTE, peer, it, MPI_COMM_WORLD);
			}
		}
		if (rank == 0)
			printf("ping-pong %8zu bytes: %8.1f us per round trip\n", sz,
			       (MPI_Wtime() - t0) * 1e6 / ITERS);
	}
	{
		int64_t *mine = malloc(NREDUCE * sizeof(*mine)), *sum = malloc(NREDUCE * sizeof(*sum));
		int i, r;

		if (!mine || !sum)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (i = 0; i < NREDUCE; i++)
			mine[i] = (int64_t)i * (rank + 1) - rank;
		MPI_Allreduce(mine, sum, NREDUCE, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		for (i = 0; i < NREDUCE; i++) {
			int64_t w = 0;

			for (r = 0; r < size; r++)
				w += (int64_t)i * (r + 1) - r;
			if (sum[i] != w) {
				fprintf(stderr, "FAIL Allreduce: rank %d element %d: %lld, want %lld\n", rank, i,
					(long long)sum[i], (long long)w);
				fails++;
				break;
			}
		}
		if (rank == 0)
			printf("Allreduce of %d int64 over %d ranks: %s\n", NREDUCE, size,
			       fails ? "wrong" : "right");
		free(mine);
		free(sum);
	}
	if (getenv("MPI_CHECK_ONE_SIDED")) {
		/* one-sided: rank 0 puts into rank 1's window and gets it back */
		const int n = 1 << 18;
		uint8_t *win_mem, *back = malloc((size_t)n);
		MPI_Win win;

		if (!back)
			MPI_Abort(MPI_COMM_WORLD, 2);
		MPI_Win_allocate(n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem, &win);
		memset(win_mem, 0, (size_t)n);
		MPI_Win_fence(0, win);
		if (rank == 0) {
			fill(buf, (size_t)n, 99);
			MPI_Put(buf, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
		}
		MPI_Win_fence(0, win);
		if (rank == 0)
			MPI_Get(back, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
		MPI_Win_fence(0, win);
		if (rank == 0) {
			fill(want, (size_t)n, 99);
			if (memcmp(back, want, (size_t)n)) {
				fprintf(stderr, "FAIL one-sided: what MPI_Get read is not what MPI_Put wrote\n");
				fails++;
			}
			printf("MPI_Put and MPI_Get of %d bytes: %s\n", n, fails ? "wrong" : "right");
		}
		MPI_Win_free(&win);
		free(back);
	}
	MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: %s\n", fails ? "FAILED" : "all checks passed");
	free(buf);
	free(want);
	MPI_Finalize();
	return fails ? 1 : 0;
}
