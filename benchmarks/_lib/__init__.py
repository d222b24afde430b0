"""Helpers the benchmark scripts share (a script never imports another script): where things are, the
small-spaces runner, the flagship spaces, per-run traces and the per-space gaps to Kernel Tuner's best."""
