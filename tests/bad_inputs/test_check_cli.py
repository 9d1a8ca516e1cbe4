"""Bad inputs of `axialrope check`: a gate (--strict) never passes having checked nothing."""

import pytest

# pytest.param(make(kit) -> argv, a word of the message, id=...)
CLI_CASES = [
    pytest.param(
        lambda k: ["check", "--impl", "axialrope-half", "--axes", "1", "--large", "nan", "--strict"],
        "--large",
        id="check-large-nan",  # every precision check would be n/a: the gate would pass vacuously
    ),
    pytest.param(lambda k: ["check", "--impl", "wan", "--large", "inf"], "--large", id="check-large-infinite"),
    pytest.param(lambda k: ["check", "--impl", "wan", "--large", "1e39"], "float32", id="check-large-beyond-float32"),
]


@pytest.mark.parametrize("make, word", CLI_CASES)
def test_a_bad_command_line_is_a_one_line_usage_error_before_any_output(expect_usage_error, make, word):
    expect_usage_error(make, word)


# pytest.param(make(kit) -> argv, exit code, a word of the output, the paths that may change, id=...)
RUN_CASES = [
    pytest.param(
        lambda k: ["check", "--impl", "wan", "--axes", "1", "--strict"],  # wan has three axes only: all skipped
        1,
        "no check ran",
        (),
        id="check-strict-with-nothing-to-check",
    ),
    pytest.param(
        lambda k: ["check", "--impl", "axialrope-half", "--axes", "1", "--strict"],
        0,
        "axialrope-half 1D",
        (),
        id="check-strict-that-checks-passes",
    ),
]


@pytest.mark.parametrize("make, code, word, may_change", RUN_CASES)
def test_a_check_run_says_what_it_checked(expect_run_outcome, make, code, word, may_change):
    expect_run_outcome(make, code, word, may_change)
