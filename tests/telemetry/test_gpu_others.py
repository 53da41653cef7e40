"""Other processes on a row's GPU through the NVML seam (an autospec of the real pynvml, test_nvml_sampler.fake_nvml):
the row's own pids are not others', an MPS server is neither, what NVML cannot say is a note (never a 0), and pids
from another PID namespace are never taken for others."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed (pip install nvidia-ml-py)")
from test_nvml_sampler import PARKED_S, fake_nvml  # noqa: E402

from edgebench.telemetry.gpu_processes import MPS_SERVER, GpuProcesses  # noqa: E402
from edgebench.telemetry.host_share import busy_reading  # noqa: E402
from edgebench.telemetry.nvml import NvmlSampler  # noqa: E402

OURS, OTHER, MPS = 4242, 777, 99


def procs(*pids: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(pid=p, usedGpuMemory=2**30) for p in pids]


def util(**sm_by_pid: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(pid=int(p[1:]), timeStamp=1_700_000_000_000_000 + i, smUtil=v, memUtil=0, encUtil=0,
                            decUtil=0) for i, (p, v) in enumerate(sm_by_pid.items())]


def sampled(m, own=(OURS,), watch=True):
    s = NvmlSampler(PARKED_S, nvml=m, watch_processes=watch)
    s.watch_pids(list(own))
    s.start()
    return s.stop()


def test_others_sm_time_and_count_exclude_the_rows_own_processes():
    m = fake_nvml()
    m.nvmlDeviceGetComputeRunningProcesses.return_value = procs(OURS, OTHER)
    m.nvmlDeviceGetProcessUtilization.return_value = util(p4242=60, p777=30)
    tl = sampled(m)
    assert tl.values["others_gpu_procs"] == [1.0, 1.0] and tl.values["others_gpu_sm_pct"] == [30.0, 30.0]
    m.nvmlDeviceGetComputeRunningProcesses.assert_any_call("handle-0")
    assert busy_reading([tl], tl.t_ns[0], tl.t_ns[-1], ["cuda:0"], 1).fields()["others_gpu_pct_mean"] == 30.0
    # the next read asks only for samples newer than the newest seen
    since = [c.args[1] for c in m.nvmlDeviceGetProcessUtilization.call_args_list]
    assert since[1:] == [1_700_000_000_000_001] * (len(since) - 1)


def test_no_process_sampled_since_the_last_read_is_zero_not_missing():
    m = fake_nvml()
    m.nvmlDeviceGetComputeRunningProcesses.return_value = procs(OURS)
    m.nvmlDeviceGetProcessUtilization.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
    tl = sampled(m)
    assert tl.values["others_gpu_sm_pct"] == [0.0, 0.0] and tl.values["others_gpu_procs"] == [0.0, 0.0]


def test_per_process_utilization_unsupported_counts_processes_and_says_so():
    m = fake_nvml()
    m.nvmlDeviceGetComputeRunningProcesses.return_value = procs(OURS, OTHER)
    m.nvmlDeviceGetProcessUtilization.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
    tl = sampled(m)
    assert tl.values["others_gpu_procs"] == [1.0, 1.0]
    assert all(math.isnan(v) for v in tl.values["others_gpu_sm_pct"])
    assert any(n.startswith("nvml per-process utilization: ") and "others_gpu_sm_pct not read" in n for n in tl.notes)
    assert m.nvmlDeviceGetProcessUtilization.call_count == 1  # asked once, not at every sample


def test_pids_of_another_namespace_are_not_taken_for_others():
    m = fake_nvml()  # a container: NVML lists host pids, none of them the row's
    m.nvmlDeviceGetComputeRunningProcesses.return_value = procs(50001, 50002)
    m.nvmlDeviceGetProcessUtilization.return_value = util(p50001=90, p50002=5)
    tl = sampled(m)
    assert all(math.isnan(v) for v in tl.values["others_gpu_sm_pct"] + tl.values["others_gpu_procs"])
    assert any("none of the processes NVML lists on" in n and "PID namespace" in n for n in tl.notes)
    assert busy_reading([tl], tl.t_ns[0], tl.t_ns[-1], ["cuda:0"], 1).busy is None


def test_an_mps_server_runs_its_clients_work_and_is_nobodys():
    m = fake_nvml()
    m.nvmlDeviceGetComputeRunningProcesses.return_value = procs(OURS, MPS, OTHER)
    m.nvmlDeviceGetProcessUtilization.return_value = util(p99=70, p777=10)
    reader = GpuProcesses(m, "handle-0", name_of=lambda pid: MPS_SERVER if pid == MPS else "python")
    assert reader.read({OURS}) == {"others_gpu_procs": 1.0, "others_gpu_sm_pct": 10.0}
    assert reader.attributable


def test_only_gpu_rows_read_processes_and_an_unanswered_listing_is_a_note():
    assert NvmlSampler.create(0.05, placements=("cpu",)).watch_processes is False
    assert NvmlSampler.create(0.05, placements=("cuda:0",)).watch_processes is True
    m = fake_nvml()
    tl = sampled(m, watch=False)
    assert "others_gpu_procs" not in tl.channels and m.nvmlDeviceGetComputeRunningProcesses.call_count == 0
    m = fake_nvml()
    m.nvmlDeviceGetComputeRunningProcesses.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
    tl = sampled(m)
    assert "others_gpu_procs" not in tl.channels and "others_gpu_sm_pct" not in tl.channels
    assert any(n.startswith("processes: NOT_SUPPORTED on NVIDIA H100") for n in tl.notes)
