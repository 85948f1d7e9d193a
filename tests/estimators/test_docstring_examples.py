"""The Examples sections of the estimators' docstrings run and print what they show."""
import doctest

import pytest

import nytro

ESTIMATORS = [nytro.NytroRegressor, nytro.NystromKRLSRegressor, nytro.KRLSRegressor, nytro.LandweberRegressor,
              nytro.KOLSRegressor, nytro.NytroClassifier, nytro.NystromKRLSClassifier]


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_docstring_examples_run(cls):
    assert "Examples\n    --------\n" in cls.__doc__, f"{cls.__name__} has no Examples section"
    tests = doctest.DocTestFinder(recurse=False).find(cls, cls.__name__, globs={})
    assert tests and tests[0].examples, f"{cls.__name__}'s Examples section has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0 and failed == 0, f"{failed} of {attempted} examples of {cls.__name__} failed"
