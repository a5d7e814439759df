"""Count the outcomes of the fuzzing pass (tests/test_fuzz_inputs.py) over its whole enumeration.

Every numeric argument of every valid call in ``VALID`` is replaced by each of its variants (numpy
scalar types, 0-d and masked arrays, booleans, strings, complex numbers, Fraction/Decimal, nan and
infinities, subnormal numbers, huge sizes) and the outcome classified: ok, silent accept, crash or hang,
unclear message, valid input refused, different result, refusal changed state.  Writes
``benchmarks/measured/fuzz_counts.json`` (or the path given as the first argument) with the counts and
the label of every call that was not ok.  To count against another copy of the package (the code before
a change), put it first on PYTHONPATH and point FUZZ_TESTS_DIR at a folder holding that code's
``test_bad_inputs.py`` (whose shared objects the pass uses) and this ``test_fuzz_inputs.py``:
``PYTHONPATH=old/tree FUZZ_TESTS_DIR=old/tests FUZZ_LABEL="commit abc1234" python benchmarks/fuzz_counts.py out.json``.
"""

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, os.environ.get("FUZZ_TESTS_DIR", str(HERE.parent / "tests")))

import test_fuzz_inputs as F  # noqa: E402


def main(out: Path) -> dict:
    counts, details = collections.Counter(), collections.defaultdict(list)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        old = os.getcwd()
        os.chdir(tmp)
        try:
            for i, pos, label, expectation in F.ENUMERATION:
                func, factory = F.VALID[i]
                args, kwargs = factory()
                value = args[pos] if isinstance(pos, int) else kwargs[pos]
                replacement = dict((lab, rep) for lab, rep, _ in F.variants(value))[label]
                try:
                    outcome, detail = F.classify(i, pos, replacement, expectation, Path(tmp))
                except AssertionError as err:  # the valid call itself fails on this code
                    outcome, detail = "valid call fails", str(err)[:160]
                counts[outcome] += 1
                if outcome != "ok":
                    details[outcome].append(f"{F._label(i, pos, label)} {detail}"[:240])
        finally:
            os.chdir(old)
    result = {
        "package": os.environ.get("FUZZ_LABEL", "this checkout"),
        "callables": len({id(f) for f, _ in F.VALID}),
        "valid_calls": len(F.VALID),
        "fuzzed_calls": len(F.ENUMERATION),
        "counts": dict(counts),
        "seconds": round(time.perf_counter() - start, 1),
        "not_ok": dict(details),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "out",
        nargs="?",
        type=Path,
        default=HERE / "measured" / "fuzz_counts.json",
        help="where to write the JSON (default: benchmarks/measured/fuzz_counts.json)",
    )
    res = main(parser.parse_args().out)
    print(
        json.dumps(
            {k: res[k] for k in ("package", "callables", "valid_calls", "fuzzed_calls", "counts", "seconds")}
        )
    )
