from concurrent.futures import ThreadPoolExecutor

import pytest

from bandit_unlearning.experiments.runner import chunks, run_tasks


def square(x):
    return x * x


def test_serial_pool_and_executor_agree():
    tasks = list(range(12))
    expected = [x * x for x in tasks]
    assert run_tasks(square, tasks, progress=False) == expected
    assert run_tasks(square, tasks, workers=2, progress=False) == expected
    with ThreadPoolExecutor(3) as ex:
        assert run_tasks(square, tasks, ex, progress=False) == expected


def test_bad_arguments():
    with pytest.raises(ValueError, match="workers"):
        run_tasks(square, [1], workers=0)
    with pytest.raises(TypeError, match="Executor"):
        run_tasks(square, [1], executor="pool")
    assert chunks(range(5), 2) == [[0, 1], [2, 3], [4]]
