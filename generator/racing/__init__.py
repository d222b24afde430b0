"""Racing: more runs only where a decision still needs them (irace-style paired t-tests).

rule.py: the statistical rule (stages, paired bounds, who is undecided, merging the added runs);
candidates.py: the campaign's race between generations (`Race`); trials.py: HPO trials that race
(`RacePruner`, `raced_trial`). Imports `scoring` and the archive; the campaign and tuning use it.
"""
