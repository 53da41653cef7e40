from pathlib import Path
import sys, runpy
sys.path[:0] = [str(Path(__file__).resolve().parent), "benchmarks", "."]
import variants  # noqa: F401
runpy.run_path("docs/results/search/refgrid-resnet18/trace_unmeasured.py", run_name="__main__")
