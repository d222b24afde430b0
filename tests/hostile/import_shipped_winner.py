# expect: exception
# cheat: yes
# Imports the shipped best optimizer (generated_algorithms) and lets it search: a candidate is scored
# for its own code, so nothing of Tunesmith may be imported (issue 39 item 6; tests/test_wheel.py checks
# the same under a wheel install, where the package sits in the site-packages a run sees).


class ImportShippedWinner:
    def __call__(self, func, searchspace):
        from generated_algorithms.archive.lcb_wide_switching_nearest import SpreadHammingBoundedThresholdSwitchingRestartSearch

        SpreadHammingBoundedThresholdSwitchingRestartSearch()(func, searchspace)
