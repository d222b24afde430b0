# expect: ok
# cheat: yes
# Rewrites func and the budget so that every configuration "costs" nothing, then claims a best.
class MonkeypatchProxy:
    def __call__(self, func, searchspace):
        func.budget_spent_fraction = 0.0
        type(func).__call__ = lambda self, config, *a, **k: -1e30
        try:
            import generator.scoring.oracle as oracle
            oracle.Oracle.__call__ = lambda self, config, *a, **k: -1e30
            oracle.Oracle.call_row = lambda self, row: -1e30
        except Exception:
            pass
        best = None
        for cfg in searchspace.get_random_sample(100):
            if func(cfg) < 0:
                best = cfg
        return best, -1e30
