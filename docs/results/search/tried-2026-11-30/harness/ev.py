from pathlib import Path
import sys
sys.path[:0] = [str(Path(__file__).resolve().parent), "benchmarks", "."]
import variants  # noqa: F401
import search_eval
sys.exit(search_eval.main(sys.argv[1:]))
