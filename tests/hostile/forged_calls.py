# expect: ok
# Issue 23 item 15: claims 10**12 calls through the run's own count; figures must be the evaluator's.
class ForgedCalls:
    def __call__(self, func, searchspace):
        func.local_calls = 10**12
        for cfg in searchspace.get_random_sample(20):
            func(cfg)
