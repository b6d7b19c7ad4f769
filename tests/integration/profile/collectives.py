# tests/integration/profile/collectives.py — an mpi4py program (not ascent's) for profile_mpi.sh: a
# known number of allreduce, bcast, allgather and sendrecv calls of known sizes on MPI_COMM_WORLD
# and on a sub-communicator from Split. Each rank writes what it did to tally-RANK.json: per
# operation name the calls and bytes as nccl-tests counts them (allgather: the whole gathered
# array; sendrecv: the bytes sent), and the world ranks of its sub-communicator in its order.
import json
import sys

import numpy as np
from mpi4py import MPI

w = MPI.COMM_WORLD
r, n = w.Get_rank(), w.Get_size()
tally = {}


def did(name, nbytes):
    c = tally.setdefault(name, [0, 0])
    c[0] += 1
    c[1] += nbytes


a = np.arange(1000, dtype="f8")
b = np.empty_like(a)
for _ in range(7):
    w.Allreduce(a, b, op=MPI.SUM)
    did("allreduce", a.nbytes)
assert b[3] == 3 * n
c = np.zeros(100, dtype="i4")
for _ in range(5):
    w.Bcast(c, root=0)
    did("bcast", c.nbytes)
s = np.full(10, r, dtype="f8")
g = np.empty(10 * n, dtype="f8")
for _ in range(4):
    w.Allgather(s, g)
    did("allgather", g.nbytes)
x = np.full(50 + 0, r, dtype="f8")
y = np.empty_like(x)
for _ in range(6):
    w.Sendrecv(x, dest=r ^ 1, recvbuf=y, source=r ^ 1)
    did("sendrecv", x.nbytes)
assert y[0] == r ^ 1
# pairs {0,1}, {2,3}, ... in reverse order (key = -rank): communicator order differs from world order
sub = w.Split(color=r // 2, key=-r)
f = np.ones(64, dtype="f4")
h = np.empty_like(f)
for _ in range(3):
    sub.Allreduce(f, h)
    did("allreduce", f.nbytes)
members = MPI.Group.Translate_ranks(sub.Get_group(), list(range(sub.Get_size())), w.Get_group())
sub.Free()
with open(sys.argv[1] + "/tally-%d.json" % r, "w") as out:
    json.dump({"ops": tally, "sub_members": members}, out)
