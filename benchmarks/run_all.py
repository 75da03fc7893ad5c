"""`make bench`: run every benchmark module's main() in turn."""
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
for path in sorted(Path(__file__).parent.glob("bench_*.py")):
    module = importlib.import_module(path.stem)
    module.main()
    print(flush=True)
