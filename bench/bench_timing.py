"""bench_timing.py — what the Python benchmarks share (bench_attn.py, bench_gemm.py): how a CUDA
call is timed, and the header of a record."""
import datetime
import statistics
import time

import torch

import flashc

# Host time a call may take without the GPU waiting for it, per queued call (generous: the
# Python wrappers of flashc and SDPA take tens to ~150 microseconds per call).
HOST_HEADSTART_US_PER_CALL = 250
GPU_CYCLES_PER_US = 2000  # torch.cuda._sleep spins in clock cycles; the H200 runs at ~1.98 GHz
SLOW_CALL_MS = 50.0  # a call this slow is timed with few samples (its spread is small next to it)
SLOW_CALL_RUNS = 3


def _events_ms_per_call(function, calls, start, end):
    """`calls` back-to-back calls of `function` between the CUDA events start and end: ms per call."""
    start.record()
    for _ in range(calls):
        function()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def time_cuda_alternating(functions, warmup, runs):
    """Median milliseconds per call of each of `functions`, their samples taken in turn (sample i
    of every function before sample i + 1 of any; the order reversed every other round), so every
    player sees the same clocks and temperature. Timed one block after another, the second of two
    identical GEMMs ran up to ~10 % slower at large shapes under the H200's power limit (13th
    session, bench_gemm.c), and the peer was always second.
    Each sample times `inner` back-to-back calls between two CUDA events, with `inner` chosen so a
    sample lasts about a millisecond. Before each sample the GPU spins (torch.cuda._sleep) long
    enough for the host to queue the start event and all `inner` calls behind it, so a sample
    measures the kernels back to back and not the host's call overhead — without it a single
    1.7 ms call measured 10% slower than `flashc attn --bench` in C (H200, 2026-11-29), the Python
    overhead landing between the two events. When the slowest call takes more than SLOW_CALL_MS
    (e.g. a CUDA-core fallback), one warm-up and SLOW_CALL_RUNS samples, so that a grid with such
    a method still finishes in minutes. A function that raises (while it is probed, warmed up or
    sampled) is left out from then on: its entry in the result is the exception, and the others
    go on."""
    results = [None] * len(functions)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def sample_ms(function, calls):
        return _events_ms_per_call(function, calls, start, end)

    probes = []  # (index, probe ms)
    for index, function in enumerate(functions):
        try:
            function()  # first call: one-time setup (kernel attributes, workspace) stays out of the probe
            torch.cuda.synchronize()
            probes.append((index, sample_ms(function, 1)))
        except Exception as error:  # noqa: BLE001 (reported per function)
            results[index] = error
    if not probes:
        return results
    order = [index for index, _ in probes]  # the players still in
    samples = {index: [] for index in order}

    def attempt(index, action):
        """Runs action(); a raise drops the player (its result becomes the exception)."""
        try:
            action()
        except Exception as error:  # noqa: BLE001 (reported per function)
            results[index] = error
            order.remove(index)
            samples.pop(index)
            torch.cuda.synchronize()

    if max(ms for _, ms in probes) > SLOW_CALL_MS:
        runs = min(runs, SLOW_CALL_RUNS)
    else:
        for _ in range(max(0, warmup - 2)):
            for index in list(order):
                attempt(index, functions[index])
    inners = {index: max(1, min(50, int(1.0 / max(ms, 1e-3)))) for index, ms in probes}
    for round_index in range(runs):
        for index in list(order) if round_index % 2 == 0 else order[::-1]:
            inner = inners[index]
            torch.cuda._sleep(int(HOST_HEADSTART_US_PER_CALL * GPU_CYCLES_PER_US * (inner + 1)))
            attempt(index, lambda: samples[index].append(sample_ms(functions[index], inner)))
    for index, values in samples.items():
        results[index] = statistics.median(values)
    return results


def time_cuda_sustained(functions, block_s, rounds, on_block=None):
    """Milliseconds per call of each of `functions` in the GPU's steady state: each function runs
    back to back for about `block_s` seconds (one block, between two CUDA events, no idle gap
    inside it), the functions' blocks taking turns for `rounds` rounds (order reversed every other
    round). Round 0 brings the GPU to its power limit and temperature and is not counted; the
    result is the median over the other rounds. Why a second method: time_cuda_alternating's
    samples last about a millisecond with the GPU idling (a sleep kernel) before each, so the chip
    runs below its power limit, at clocks a training loop never sees; under a sustained load the
    H200 runs dense tensor work at its 700 W limit, and how far each kernel's clock falls there is
    part of what a user gets (docs/PERF.md, 18th session). on_block(index, round, t0, t1, ms), if
    given, is told each block's host start/end time (time.time()) for sampling clocks and power.
    A function that raises is left out (its result is the exception)."""
    results = [None] * len(functions)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls = {}
    for index, function in enumerate(functions):
        try:
            function()
            torch.cuda.synchronize()
            ms = _events_ms_per_call(function, 3, start, end)
            calls[index] = max(1, int(block_s * 1000.0 / max(ms, 1e-3)))
        except Exception as error:  # noqa: BLE001 (reported per function)
            results[index] = error
    samples = {index: [] for index in calls}
    order = list(calls)
    for round_index in range(rounds):
        for index in order if round_index % 2 == 0 else order[::-1]:
            if index not in samples:
                continue
            try:
                t0 = time.time()
                ms = _events_ms_per_call(functions[index], calls[index], start, end)
                t1 = time.time()
            except Exception as error:  # noqa: BLE001
                results[index] = error
                samples.pop(index)
                torch.cuda.synchronize()
                continue
            if round_index > 0:
                samples[index].append(ms)
            if on_block:
                on_block(index, round_index, t0, t1, ms)
    for index, values in samples.items():
        results[index] = statistics.median(values) if values else None
    return results


def record_header(benchmark, method, **extra):
    """The fields every --json record starts with: what ran, where, which builds, how timed."""
    device = torch.cuda.current_device()
    return {
        "benchmark": benchmark,
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        **extra,
        "flashc": flashc.__version__,
        "flashc_library": flashc.library_path,
        "flashc_build": flashc.build_info(),
        "flashc_kernels": flashc.kernels(device),
        "method": method,
    }
