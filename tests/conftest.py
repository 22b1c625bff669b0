"""Hypothesis profiles. `make test` runs the derandomized `ci` profile: each property test
tries the same examples on every run, so CI never fails on a draw a previous run did not make.
Search with fresh random draws (run it repeatedly) before landing a change to a rule or parser:
    HYPOTHESIS_PROFILE=explore .venv/bin/pytest tests/unit -k '<test>'
and pin anything it finds with `@example(...)` on the test. (A test's own `max_examples` wins
over the profile's.)"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", max_examples=20_000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
