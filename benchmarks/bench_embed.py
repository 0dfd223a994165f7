"""Embedding speed against the machine's limit, measured in one run.

    python benchmarks/bench_embed.py [--repeat 3] [--skip-run] [--short-queries 100000]

1. The limit: the best single-precision matrix multiply rate here, the best of numpy
   (OpenBLAS; measured in a child process with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
   unset, so OpenBLAS picks its own kernel), torch.matmul and ONNX Runtime's MatMul, each
   over a few shapes (the model's own among them).
2. The embedding stage: the demo's strategy-E chunk texts embedded by evalcore's embedder
   (the exported model in OpenVINO, and in ONNX Runtime) and by sentence-transformers'
   default ``encode`` (batch 32, torch), interleaved; best and spread of ``--repeat`` runs.
3. A whole run: ``python -m evalcore run --strategies E --retrievers dense`` on a fresh
   store over XQuAD (imported with ``import-squad``; about 1,000 chunks and 1,190
   questions), timed from process start to exit (imports, model load, chunking,
   embedding, retrieval, storing), with the default runtime, with ONNX Runtime and with
   ``EVALCORE_RUNTIME=torch`` (the sentence-transformers path the product used before).
   For the default runtime it also prints the time to first work (process start to the
   run's row in the store: imports, inputs and model loaded) and where the rest went (the
   stage timings the run stored, and what is left: start-up, writing, the summary).
4. Short queries: ``--short-queries N`` questions (XQuAD's, cycled; ~12 word pieces each)
   embedded by evalcore's embedder in one call, as a run embeds its queries.
5. The CLI's start-up: ``python -X importtime -m evalcore --help`` (the evalcore modules'
   cumulative import time and the process's wall time, best of ``--repeat``).

The load average is printed at the start and the end: on a shared machine the ratios (work
and limit measured in the same run, the limit at its best) are what can be compared.

Useful FLOPs count the transformer's matrix products for the real (unpadded) tokens of
each text, truncated to the model's window, [CLS] and [SEP] included: per layer and text
of L tokens, 2*L*h*(3h) for Q, K, V, 2*L*h*h for the attention output, 2*2*L*h*i for the
feed-forward block, and 2*2*L*L*h for the attention scores and their weighted sum
(h = hidden size, i = intermediate size, from the model's config.json). Embeddings,
layer norms, softmax and pooling are not counted. Ratio = useful FLOP/s / limit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
XQUAD = ROOT.parent / "shared" / "data" / "xquad" / "xquad.en.json"
SHAPES = [(2048, 2048, 2048), (4096, 384, 1536), (4096, 1536, 384), (4096, 384, 384)]

_NUMPY_CHILD = """
import json, time, numpy as np
best = 0.0
for m, k, n in %r:
    a = np.random.rand(m, k).astype(np.float32); b = np.random.rand(k, n).astype(np.float32)
    a @ b
    for _ in range(%d):
        t = time.perf_counter(); a @ b; best = max(best, 2 * m * k * n / (time.perf_counter() - t))
print(json.dumps(best))
"""


def numpy_rate(repeat: int) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    out = subprocess.run(
        [sys.executable, "-c", _NUMPY_CHILD % (SHAPES, repeat)], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def torch_rate(repeat: int) -> float:
    import torch

    torch.set_num_threads(_cores())
    best = 0.0
    for m, k, n in SHAPES:
        a, b = torch.rand(m, k), torch.rand(k, n)
        torch.matmul(a, b)
        for _ in range(repeat):
            t = time.perf_counter()
            torch.matmul(a, b)
            best = max(best, 2 * m * k * n / (time.perf_counter() - t))
    return best


def _matmul_model(m: int, k: int, n: int):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        "mm",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [k, n]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [m, n])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def openvino_rate(repeat: int) -> float:
    import numpy as np
    import onnx
    import openvino as ov

    best = 0.0
    core = ov.Core()
    for m, k, n in SHAPES:
        path = Path(tempfile.mkdtemp(prefix="bench-mm-")) / "mm.onnx"
        onnx.save(_matmul_model(m, k, n), str(path))
        req = core.compile_model(
            str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": _cores()}
        ).create_infer_request()
        feeds = {"a": np.random.rand(m, k).astype(np.float32), "b": np.random.rand(k, n).astype(np.float32)}
        req.infer(feeds)
        for _ in range(repeat):
            t = time.perf_counter()
            req.infer(feeds)
            best = max(best, 2 * m * k * n / (time.perf_counter() - t))
    return best


def onnxruntime_rate(repeat: int) -> float:
    import numpy as np
    import onnxruntime as ort

    best = 0.0
    for m, k, n in SHAPES:
        model = _matmul_model(m, k, n)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = _cores()
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        feeds = {"a": np.random.rand(m, k).astype(np.float32), "b": np.random.rand(k, n).astype(np.float32)}
        sess.run(None, feeds)
        for _ in range(repeat):
            t = time.perf_counter()
            sess.run(None, feeds)
            best = max(best, 2 * m * k * n / (time.perf_counter() - t))
    return best


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def useful_flops(texts: list[str]) -> float:
    """Transformer FLOPs of the unpadded, truncated tokens of ``texts`` (see the docstring)."""
    from tokenizers import Tokenizer

    from evalcore.embedding.embedder import default_model_path

    folder = default_model_path()
    cfg = json.loads((folder / "config.json").read_text())
    window = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(window)
    h, i, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    total = 0.0
    for enc in tok.encode_batch(texts):
        n = len(enc.ids)
        total += layers * (2 * n * h * 3 * h + 2 * n * h * h + 4 * n * h * i + 4 * n * n * h)
    return total


def demo_e_texts() -> list[str]:
    from evalcore.chunking import chunk_corpus, parse_strategies
    from evalcore.inputs.demo import load_demo_corpus

    return [c.text for c in chunk_corpus(load_demo_corpus(), parse_strategies("E")[0])]


def best_time(fn, repeat: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), times


def cli_startup(repeat: int) -> tuple[float, float]:
    """(wall s of ``python -m evalcore --help``, s its importtime gives evalcore.cli), best of ``repeat``."""
    walls, imports = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "evalcore", "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        walls.append(time.perf_counter() - t)
        cumulative = [
            int(line.split("|")[1]) for line in out.stderr.splitlines() if line.rstrip().endswith("| evalcore.cli")
        ]
        imports.append(cumulative[-1] / 1e6 if cumulative else float("nan"))
    return min(walls), min(imports)


def breakdown(store: Path, total: float, started: float) -> str:
    """Where a whole run's time went: first work (process start to the run's row), the
    stages the run stored, and the rest (writing, the summary, exit)."""
    import duckdb

    con = duckdb.connect(str(store), read_only=True)
    created = con.execute("SELECT epoch(created_at) FROM runs").fetchone()
    stages = con.execute("SELECT stage, sum(seconds) FROM timings GROUP BY stage ORDER BY min(rowid)").fetchall()
    con.close()
    first = (created[0] if created else started) - started
    staged = sum(sec for _, sec in stages)
    parts = [f"first work {first:.2f}"] + [f"{name} {sec:.2f}" for name, sec in stages]
    parts.append(f"rest (writing, summary, exit) {total - first - staged:.2f}")
    return ", ".join(parts) + " s"


def short_queries(n: int) -> list[str]:
    qs = [q["question"] for q in _squad_questions(XQUAD)]
    return [qs[i % len(qs)] for i in range(n)]


def _squad_questions(path: Path) -> list[dict[str, str]]:
    data = json.loads(path.read_text())
    return [{"question": qa["question"]} for art in data["data"] for par in art["paragraphs"] for qa in par["qas"]]


def whole_run(folder: Path, runtime: str | None, detail: bool = False) -> float | tuple[float, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if runtime:
        env["EVALCORE_RUNTIME"] = runtime
    store = Path(tempfile.mkdtemp(prefix="bench-embed-")) / "s.duckdb"
    cmd = [
        sys.executable,
        "-m",
        "evalcore",
        "--store",
        str(store),
        "run",
        "--corpus",
        str(folder / "corpus"),
        "--questions",
        str(folder / "questions.jsonl"),
        "--strategies",
        "E",
        "--retrievers",
        "dense",
        "-q",
    ]
    wall0 = time.time()
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=ROOT, check=True, capture_output=True)
    total = time.perf_counter() - t
    return (total, breakdown(store, total, wall0)) if detail else total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--skip-run", action="store_true", help="skip the whole-run measurement")
    p.add_argument(
        "--short-queries",
        type=int,
        default=100_000,
        metavar="N",
        help="short queries embedded (0: skip; default 100000)",
    )
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} (5 min {load[1]:.2f}, 15 min {load[2]:.2f}) on {_cores()} cores")
    wall, imports = cli_startup(args.repeat)
    print(
        f"CLI start-up: python -m evalcore --help {wall:.2f} s wall, evalcore.cli imports {imports:.2f} s (importtime)"
    )

    def measure_limit() -> dict[str, float]:
        return {
            "numpy": numpy_rate(args.repeat),
            "torch": torch_rate(args.repeat),
            "onnxruntime": onnxruntime_rate(args.repeat),
            "openvino": openvino_rate(args.repeat),
        }

    rates = measure_limit()
    limit = max(rates.values())
    print(
        "sgemm GFLOP/s: "
        + ", ".join(f"{k} {v / 1e9:.0f}" for k, v in rates.items())
        + f"  -> limit {limit / 1e9:.0f} ({max(rates, key=rates.get)})"
    )

    from sentence_transformers import SentenceTransformer

    from evalcore.embedding.embedder import default_model_path, load_embedder

    texts = demo_e_texts()
    flops = useful_flops(texts)
    ours = load_embedder()
    contenders = {f"evalcore ({b})": load_embedder(runtime=b) for b in ("openvino", "onnxruntime")}
    contenders["sentence-transformers encode()"] = SentenceTransformer(str(default_model_path()), device="cpu")
    for model in contenders.values():
        model.encode(texts[:64])
    timed = {label: [] for label in contenders}
    for _ in range(args.repeat):  # interleaved, so a busy moment does not favour one
        for label, model in contenders.items():
            t = time.perf_counter()
            model.encode(texts)
            timed[label].append(time.perf_counter() - t)
    print(
        f"embedding stage: {len(texts)} demo E chunks, {flops / 1e9:.0f} useful GFLOP "
        f"(default runtime here: {ours.runtime})"
    )
    for label, ts in timed.items():
        t = min(ts)
        print(
            f"  {label:<32} best {t:6.2f} s ({1000 * t / len(texts):5.1f} ms/chunk, "
            f"spread {min(ts):.2f}-{max(ts):.2f} s)  {flops / t / 1e9:6.0f} GFLOP/s  ratio {flops / t / limit:.2f}"
        )

    if not args.skip_run:
        if not XQUAD.exists():
            print(f"whole run: skipped ({XQUAD} is not present)")
            return 0
        from evalcore.chunking import chunk_corpus, parse_strategies
        from evalcore.inputs.corpus import load_corpus
        from evalcore.inputs.public_sets import import_squad

        folder = Path(tempfile.mkdtemp(prefix="bench-xquad-"))
        import_squad(XQUAD, folder)
        corpus = load_corpus(folder / "corpus")
        chunks = [c.text for c in chunk_corpus(corpus, parse_strategies("E")[0])]
        questions = [json.loads(x)["question"] for x in (folder / "questions.jsonl").read_text().splitlines()]
        run_flops = useful_flops(chunks + questions)
        print(
            f"whole run: XQuAD, {len(chunks)} E chunks + {len(questions)} questions, "
            f"{run_flops / 1e9:.0f} useful GFLOP, fresh store, process start to exit"
        )
        runs = (
            (f"evalcore (default: {ours.runtime})", None),
            ("EVALCORE_RUNTIME=onnxruntime", "onnxruntime"),
            ("EVALCORE_RUNTIME=torch", "torch"),
        )
        for label, runtime in runs:
            if runtime is None:
                timed_runs = [whole_run(folder, None, detail=True) for _ in range(args.repeat)]
                times = [float(x[0]) for x in timed_runs]
                split = str(min(timed_runs)[1])
            else:
                times = [float(whole_run(folder, runtime)) for _ in range(args.repeat if runtime != "torch" else 1)]
            t = min(times)
            print(
                f"  {label:<32} best {t:6.2f} s (runs: {', '.join(f'{x:.1f}' for x in times)})  "
                f"{run_flops / t / 1e9:6.0f} GFLOP/s  ratio {run_flops / t / limit:.2f}"
            )
            if runtime is None:
                print(f"    best run's split: {split}")
    if args.short_queries and XQUAD.exists():
        queries = short_queries(args.short_queries)
        q_flops = useful_flops(queries)
        pieces = sum(ours.count_pieces(queries[:2000])) / min(len(queries), 2000)
        times = []
        for _ in range(max(1, args.repeat if len(queries) <= 20_000 else 1)):
            t = time.perf_counter()
            ours.encode(queries)
            times.append(time.perf_counter() - t)
        t = min(times)
        print(
            f"short queries: {len(queries)} (XQuAD's questions cycled, {pieces:.1f} word pieces on average), "
            f"{q_flops / 1e9:.0f} useful GFLOP: best {t:.2f} s ({1e6 * t / len(queries):.0f} us/query)  "
            f"{q_flops / t / 1e9:6.0f} GFLOP/s  ratio {q_flops / t / limit:.2f}"
        )
    again = measure_limit()  # a busy machine at the start must not flatter the ratios
    print(
        "sgemm GFLOP/s again at the end: "
        + ", ".join(f"{k} {v / 1e9:.0f}" for k, v in again.items())
        + f"; ratios above use {limit / 1e9:.0f}, the best is {max(limit, *again.values()) / 1e9:.0f}"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
