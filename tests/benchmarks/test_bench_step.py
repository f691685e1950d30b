"""The step-variant benchmark runs its CPU check and records every variant it can time here."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_tiny_check_times_every_variant_but_compilation(tmp_path):
    out = tmp_path / "bench_step.json"
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_step.py"), "--tiny", "--preset", "ci",
                    "--dataset", "synthetic-objects", "--out", str(out)],
                   check=True, capture_output=True, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"})
    record = json.loads(out.read_text())
    assert set(record["results"]) == {"eager", "batch_128", "fused_adamw"}
    assert all(r["images_per_s"] > 0 and r["tflop_per_s"] > 0 and r["mfu"] is None for r in record["results"].values())
    assert record["peak_flops"] is None  # no peak is known for a CPU
