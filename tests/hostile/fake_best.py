# expect: ok
# cheat: yes
# Claims a perfect result without evaluating anything.
class FakeBest:
    def __call__(self, func, searchspace):
        func.budget_spent_fraction = 1.0
        return searchspace.get_random_sample(1)[0], 0.0
