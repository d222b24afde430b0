"""The stages after a campaign's evolution loop: HPO, validation (the final choice) and the sealed test.

`FinalStages` is a part of `Campaign` (campaign.loop), kept apart because it runs only once the loop has
finished its budget. It uses the campaign's `cfg`, `archive`, `progress` and `_evaluate` (the test's
stand-in for the sandbox, or None).
"""

from __future__ import annotations

import sys

from generator.scoring.degenerate import aggregated
from generator.tasks.entries import load_task_set


class FinalStages:
    """HPO, validation and the sealed test, in that order (`Campaign._run` calls them when finished)."""

    def _sealed_test_stage(self) -> None:
        """With `[tasks] test`: the final winner scored once on the sealed test tasks (campaign.sealed_test)."""
        from generator.campaign.sealed_test import open_test

        if not self.cfg.tasks.test:
            return
        winner, params = self._final_winner()
        if winner is None:
            return
        tasks = load_task_set(self.cfg.tasks.test, self.cfg.tasks)
        code = self.archive.code(self.archive.candidate(winner)) or ""
        open_test(
            self.archive.run_dir,
            winner,
            params,
            tasks,
            self.cfg.evaluation.repeats,
            self._final_seed(),
            lambda tasks, repeats, seed: self._score_final(code, tasks, repeats, seed, params),
        )

    def _score_final(self, code: str, tasks: list, repeats: int, seed: int, params: dict | None):
        """Fitness of code (with hyperparameter values) on tasks selection never saw: validation or sealed test."""
        ev = self.cfg.evaluation
        if self._evaluate is not None:
            return aggregated(self._evaluate(code, tasks, repeats, seed, ev.timeout, ev.workers), ev.aggregate)
        from generator.evaluation.evaluate import evaluate_source

        return aggregated(
            evaluate_source(
                code,
                tasks,
                repeats=repeats,
                seed=seed,
                timeout_s=ev.timeout,
                hyperparameters=params,
                workers=ev.workers,
            ),
            ev.aggregate,
        )

    def _final_seed(self) -> int:
        """The base seed of the final stages (each adds its own offset, so their streams differ)."""
        ev = self.cfg.evaluation
        return ev.seed if ev.seed is not None else self.cfg.evolution.seed

    def _final_winner(self) -> tuple[str | None, dict | None]:
        """The candidate the campaign hands over (validation winner, else the leaderboard's best) and its values."""
        from generator.campaign.final_choice import load_choice
        from generator.tuning.results import load_results

        choice = load_choice(self.archive.run_dir) if self.cfg.tasks.validation else None
        if choice is not None and choice.winner is not None:
            finalist = next(f for f in choice.finalists if f.id == choice.winner)
            return choice.winner, finalist.params
        board = self.archive.best(1)
        if not board:
            return None, None
        tuned = load_results(self.archive.run_dir).get(board[0].id)
        return board[0].id, (tuned.chosen_params if tuned is not None and tuned.accepted else None)

    def _validation_stage(self) -> None:
        """With `[tasks] validation`: the final choice of winners, on tasks selection never saw."""
        from generator.campaign.final_choice import choose

        if not self.cfg.tasks.validation:
            return
        tasks = load_task_set(self.cfg.tasks.validation, self.cfg.tasks)
        choice = choose(
            self.archive,
            tasks,
            self.cfg.tasks.finalists,
            self.cfg.evaluation.repeats,
            self._final_seed(),
            self._score_final,
        )
        self.archive.write_status(
            {
                **self.archive.status(),
                "best": choice.winner or self.archive.status().get("best"),
                "validation": {
                    "winner": choice.winner,
                    "tasks": choice.tasks,
                    "use": "final choice of winners only, never selection",
                },
            }
        )

    def _hpo_stage(self) -> None:
        """The `[hpo]` stage, when the config enables it: Optuna tunes the best candidates."""
        from generator.tuning.hpo import campaign_stage
        from generator.tuning.results import format_result

        try:
            results = campaign_stage(self.archive.run_dir, progress=self.progress)
        except KeyboardInterrupt as exc:  # resume runs the stage again, on from the finished trials
            exc.resume_command = f"tunesmith resume {self.archive.run_dir}"
            raise
        for result in results:
            print(format_result(result), file=sys.stderr)
