"""MPI ping-pong between ranks 0 and 1 (mpi4py): ROUNDS round trips of a BYTES message,
each reported to XDC_EVENTS as a "step" (docs/workload.md); rank 0 prints the minimum and
median round trip. Usage: pingpong.py [ROUNDS] [BYTES]."""
import os
import sys
import time

from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xdc_events import emit  # noqa: E402


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    buf = bytearray(size)
    rtt = []
    for i in range(-1, rounds):  # round -1 opens the connections, unmeasured
        comm.Barrier()
        t0 = time.time()
        if rank == 0:
            comm.Send(buf, dest=1)
            comm.Recv(buf, source=1)
        elif rank == 1:
            comm.Recv(buf, source=0)
            comm.Send(buf, dest=0)
        t1 = time.time()
        if i >= 0:
            emit(rank, "step", "begin", t=t0, step=i)
            emit(rank, "step", "end", t=t1, step=i)
            rtt.append((t1 - t0) * 1e3)
    if rank == 0:
        rtt.sort()
        print(f"pingpong: {rounds} round trips of {size} bytes: "
              f"min {rtt[0]:.3f} ms median {rtt[len(rtt) // 2]:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
