# expect: ok
# Issue 23 item 12: honest code that evaluates each population batch with ThreadPoolExecutor(8).
from concurrent.futures import ThreadPoolExecutor


class ThreadedPopulation:
    def __call__(self, func, searchspace):
        best = None
        with ThreadPoolExecutor(8) as pool:
            while True:
                batch = searchspace.get_random_sample(16)
                for cfg, value in zip(batch, pool.map(func, batch)):
                    if best is None or value < best[1]:
                        best = (cfg, value)
