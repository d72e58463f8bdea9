"""2-rank worker for test_gather_full: gather_full against DTensor.full_tensor() for several layouts."""

import json
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

from fsdpcfg.train.engine.fsdp import gather_full
from fsdpcfg.train.entry import close_process_group


def main(out: str) -> None:
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    torch.manual_seed(0)
    report = {}
    cases = {
        "even_rows_many_chunks": (torch.randn(64, 48), 0.001),  # 1 KiB chunks: many all_gathers
        "even_rows_one_chunk": (torch.randn(64, 48), 64.0),
        "uneven_rows_fallback": (torch.randn(63, 5), 0.001),  # 63 rows over 2 ranks: full_tensor()
        "vector": (torch.randn(10), 0.001),
    }
    for name, (full, mb) in cases.items():
        dt = distribute_tensor(full, mesh, [Shard(0)])
        got = gather_full(dt, chunk_megabytes=mb)
        report[name] = {
            "equal": bool(torch.equal(got, full)),
            "shape": list(got.shape),
            "same_as_full_tensor": bool(torch.equal(got, dt.full_tensor())),
        }
    plain = torch.randn(3, 3)
    report["plain_clone"] = {
        "equal": bool(torch.equal(gather_full(plain), plain)),
        "copy": gather_full(plain).data_ptr() != plain.data_ptr(),
    }
    if dist.get_rank() == 0:
        with open(out, "w") as fh:
            json.dump(report, fh)
    close_process_group(clean=True)  # a barrier first: rank 1 leaving at once aborted rank 0 ("terminate called")


if __name__ == "__main__":
    main(sys.argv[1])
