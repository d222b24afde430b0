"""The version is written once (generator.__version__); the package metadata and run.json take it from there."""

import importlib.metadata
import tomllib

from support.paths import ROOT

import generator


def test_the_version_is_written_once_and_the_metadata_reads_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "generator.__version__"}
    assert importlib.metadata.version("tunesmith") == generator.__version__


def test_the_release_that_added_the_run_format_is_0_2():
    # run directories carry a format from 0.2.0 on (generator.config.stored); 0.1.0 made format 1
    assert tuple(int(x) for x in generator.__version__.split(".")[:2]) >= (0, 2)
