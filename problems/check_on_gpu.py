"""On the GPU machine: compile (NVRTC, as Kernel Tuner's CuPy backend does), run, verify and time every config."""

import importlib.util
import json
import math
import os
import sys
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor

import numpy as np


def spec(name):
    path = f"problems/{name}/problem.toml"
    doc = tomllib.loads(open(path).read())
    return doc


def kernel_string(doc, cfg, grid, threads):
    src = open(f"problems/{doc['name']}/{doc['kernel_file']}").read()
    d = {
        "grid_size_x": grid[0],
        "grid_size_y": grid[1],
        "grid_size_z": grid[2],
        "block_size_x": threads[0],
        "block_size_y": threads[1],
        "block_size_z": threads[2],
        **cfg,
        "kernel_tuner": 1,
    }
    return "".join(f"#define {k} {v}\n" for k, v in d.items()) + "#line 1\n" + src


def dims(doc, cfg):
    threads = (cfg.get("block_size_x", 256), cfg.get("block_size_y", 1), cfg.get("block_size_z", 1))
    ps = list(doc["problem_size"]) + [1] * (3 - len(doc["problem_size"]))
    grid = []
    for i, ax in enumerate("xyz"):
        div = doc.get(f"grid_div_{ax}")
        if div is None:
            n = threads[i]
        else:
            n = int(np.prod([cfg[d] for d in div])) if div else 1
        grid.append(math.ceil(ps[i] / n))
    return tuple(grid), threads


def options(doc):
    return ("--std=c++11",) + tuple(f"-D{k}={v}" for k, v in doc.get("defines", {}).items())


def compile_one(job):
    import cupy as cp

    name, cfg = job
    doc = spec(name)
    grid, threads = dims(doc, cfg)
    try:
        m = cp.RawModule(
            code=kernel_string(doc, cfg, grid, threads), options=options(doc), name_expressions=[doc["kernel_name"]]
        )
        m.get_function(doc["kernel_name"])
        return None
    except Exception as e:
        return str(e)[-800:]


def make_args(doc):
    rng = np.random.default_rng(doc.get("seed", 0))
    out = []
    for a in doc["arguments"]:
        dt = np.dtype(a["dtype"])
        if a.get("fill", "zeros") == "zeros":
            out.append(np.zeros(a["shape"], dt))
            continue
        x = rng.uniform(a.get("low", 0.0), a.get("high", 1.0), size=a["shape"])
        if a.get("quantum"):
            x = np.floor(x / a["quantum"]) * a["quantum"]
        out.append(x.astype(dt))
    return out


def main(names):
    import cupy as cp

    configs = json.load(open(".devcheck/configs.json"))
    jobs = [(n, c) for n in names for c in configs[n]]
    t0 = time.time()
    with ProcessPoolExecutor(14) as ex:
        errs = list(ex.map(compile_one, jobs, chunksize=4))
    print(
        "compiled", len(jobs), "in", round(time.time() - t0), "s; errors:", sum(e is not None for e in errs), flush=True
    )
    results = {}
    for n in names:
        doc = spec(n)
        args = make_args(doc)
        mod = importlib.util.spec_from_file_location("ref", f"problems/{n}/reference.py")
        ref = importlib.util.module_from_spec(mod)
        mod.loader.exec_module(ref)
        fn = getattr(ref, doc["reference"].split(":")[1])
        expected = fn({a["name"]: v for a, v in zip(doc["arguments"], args)}, {})
        dev = [cp.asarray(a) for a in args]
        outs = [i for i, a in enumerate(doc["arguments"]) if a["name"] in expected]
        rows = []
        for cfg in configs[n]:
            grid, threads = dims(doc, cfg)
            row = {"cfg": cfg}
            try:
                m = cp.RawModule(
                    code=kernel_string(doc, cfg, grid, threads),
                    options=options(doc),
                    name_expressions=[doc["kernel_name"]],
                )
                f = m.get_function(doc["kernel_name"])
                for i in outs:
                    dev[i][...] = 0
                f(grid, threads, tuple(dev))
                cp.cuda.runtime.deviceSynchronize()
                ok = True
                maxerr = 0.0
                for i in outs:
                    got = cp.asnumpy(dev[i])
                    exp = expected[doc["arguments"][i]["name"]]
                    ok &= bool(np.allclose(exp, got, atol=doc["atol"]))
                    maxerr = max(maxerr, float(np.abs(exp.astype(np.float64) - got).max()))
                s, e = cp.cuda.Event(), cp.cuda.Event()
                ts = []
                for _ in range(5):
                    s.record()
                    f(grid, threads, tuple(dev))
                    e.record()
                    e.synchronize()
                    ts.append(cp.cuda.get_elapsed_time(s, e))
                row.update(ok=ok, maxerr=maxerr, ms=float(np.median(ts)))
            except Exception as ex:
                row.update(ok=False, error=str(ex)[-600:])
            rows.append(row)
        good = [r for r in rows if r.get("ok")]
        ms = sorted(r["ms"] for r in good)
        print(
            n,
            "configs",
            len(rows),
            "ok",
            len(good),
            f"min {ms[0]:.4f} med {ms[len(ms) // 2]:.4f} max {ms[-1]:.4f} ms" if ms else "",
            flush=True,
        )
        for r in rows:
            if not r.get("ok"):
                print("  FAIL", r, flush=True)
        best = sorted(good, key=lambda r: r["ms"])[:5]
        for r in best:
            print("  best", r["cfg"], round(r["ms"], 4))
        results[n] = rows
    json.dump(results, open(os.path.join(os.environ.get("OUT", "."), f"results_{'_'.join(names)}.json"), "w"))


if __name__ == "__main__":
    main(sys.argv[1:])
