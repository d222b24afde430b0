"""The wheel's data: the top-level prompts/, problems/ and campaigns/ copied in as `generator/_data/`.

Everything else about the build is in pyproject.toml. The data folders stay outside the package in the
source tree (data and code apart); a wheel needs them inside the package, where generator/resources.py
finds them and the sandbox's wall around the package hides the caches from candidates.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# what a run needs of each folder (the problems' build scripts and READMEs are for the checkout only)
DATA = {
    "prompts": ["*.j2"],
    "problems": ["*/*", "caches/*/*.json.gz"],
    "campaigns": ["*.toml"],
}


class BuildWithData(build_py):
    def run(self):
        super().run()
        for folder, patterns in DATA.items():
            for pattern in patterns:
                for src in sorted((ROOT / folder).glob(pattern)):
                    if src.is_file():
                        dest = Path(self.build_lib) / "generator" / "_data" / folder / src.relative_to(ROOT / folder)
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(src, dest)


setup(cmdclass={"build_py": BuildWithData})
