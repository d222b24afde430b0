"""Move screening: which of the unvisited options to evaluate next (random, or by a model of the
measurements so far). Same conventions as `components.py`; populations use the same methods to
pick the most promising child of a brood.
"""

from __future__ import annotations

from generator.llm.synth.components import Component

SCREENINGS = {
    c.name: c
    for c in (
        Component(
            "screening",
            "none",
            "random move order",
            '''
def choose(self, options):
    """Move selection: a uniformly random unvisited option."""
    return options[int(self.rng.integers(len(options)))]
''',
        ),
        Component(
            "screening",
            "knn",
            "k-nearest-neighbour screening of moves",
            '''
def choose(self, options):
    """Move selection: the option that a k-nearest-neighbour model of past measurements predicts best."""
    if len(self.history) < 3 or len(options) == 1 or self.rng.random() < self.explore_rate:
        return options[int(self.rng.integers(len(options)))]
    if len(options) > 32:  # large neighbourhoods: screen a random subset, keeping each step cheap
        options = [options[int(i)] for i in self.rng.choice(len(options), size=32, replace=False)]
    while len(self.knn_x) < len(self.history):  # extend the model with new measurements
        config = self.history[len(self.knn_x)]
        self.knn_x.append(np.asarray(self.indices(config), dtype=np.float32) / self.knn_scale)
        self.knn_y.append(self.cache[config])
    x, y = np.asarray(self.knn_x), np.asarray(self.knn_y)
    if len(y) > 128:  # the best and the most recent measurements say most about the options at hand
        keep = np.union1d(np.argsort(y)[:64], np.arange(len(y) - 64, len(y)))
        x, y = x[keep], y[keep]
    ranks = np.argsort(np.argsort(y)).astype(float)  # ranks: robust to scale; failures rank worst
    cand = np.asarray([self.indices(c) for c in options], dtype=np.float32) / self.knn_scale
    dist = np.abs(cand[:, None, :] - x[None, :, :]).sum(axis=2)
    k = min(self.knn_k, len(ranks))
    nearest = np.argpartition(dist, k - 1, axis=1)[:, :k]
    weights = 1.0 / (np.take_along_axis(dist, nearest, axis=1) + 1e-6)
    predicted = (weights * ranks[nearest]).sum(axis=1) / weights.sum(axis=1)
    return options[int(np.argmin(predicted))]
''',
            ("knn_k", "explore_rate"),
            state="self.knn_x, self.knn_y = [], []  # the model: scaled value positions and values, in history order\n"
            "self.knn_scale = np.asarray([max(1, len(v) - 1) for v in self.values], dtype=np.float32)\n",
        ),
        Component(
            "screening",
            "additive",
            "additive-model screening of moves",
            '''
def choose(self, options):
    """Move selection: the option an additive model of log-cost (one weight per parameter value) predicts best."""
    if len(self.history) < 4 or len(options) == 1 or self.rng.random() < self.explore_rate:
        return options[int(self.rng.integers(len(options)))]
    while len(self.model_rows) < len(self.history):  # add each new measurement to the normal equations
        config = self.history[len(self.model_rows)]
        columns = self.model_offsets + np.asarray(self.indices(config))
        self.model_gram[np.ix_(columns, columns)] += 1.0
        self.model_rows.append(columns)
        self.model_y.append(self.cache[config])
    values = np.asarray(self.model_y)
    ok = values < 1e300
    if ok.sum() < 2:
        return options[int(self.rng.integers(len(options)))]
    y = np.log(np.where(ok, np.maximum(values, 1e-12), 1.0))
    y = np.where(ok, y, y[ok].max() + 1.0)  # failures: clearly worse than anything measured
    rows = np.asarray(self.model_rows)
    moments = np.zeros(self.model_width)
    np.add.at(moments, rows, np.broadcast_to((y - y.mean())[:, None], rows.shape))
    # ridge regression: a few measurements per value are enough, and unseen values stay at the mean
    weights = np.linalg.solve(self.model_gram + self.ridge * np.eye(self.model_width), moments)
    cand = self.model_offsets + np.asarray([self.indices(c) for c in options])
    return options[int(np.argmin(weights[cand].sum(axis=1)))]
''',
            ("explore_rate", "ridge"),
            state="self.model_rows, self.model_y = [], []  # one-hot columns and value of each measurement\n"
            "self.model_offsets = np.cumsum([0] + [len(v) for v in self.values[:-1]])\n"
            "self.model_width = sum(len(v) for v in self.values)\n"
            "self.model_gram = np.zeros((self.model_width, self.model_width))  # X^T X of the one-hot features\n",
        ),
    )
}
