from pathlib import Path
import sys
sys.path[:0] = [str(Path(__file__).resolve().parent), "benchmarks", "."]
import variants  # noqa: F401  (patches before the benchmarks import fit)
import search_eval
search_eval.GRIDS["r50"] = "docs/results/search/refgrid/results.csv"
search_eval.GRIDS["r18"] = "docs/results/search/refgrid-resnet18/results.csv"
import surrogate_coverage
sys.exit(surrogate_coverage.main(sys.argv[1:]))
