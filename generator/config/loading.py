"""Reading a campaign file: TOML, `extends` chains (a base plus small overlays), then validation.

`extends = "base.toml"` at the top of a campaign file names another campaign file, relative to the
file that names it; the base may extend another in turn. The files are merged before validation, the
extending file over its base: tables merge key by key, every other value (a string, a number, a list)
replaces the base's. A chain that comes back to a file it passed is refused. The run directory's
config.json holds the merged result, so a run never needs its base again. Relative paths in the merged
result (task files, templates) are found as in any campaign: from the current folder, else beside the
file that was run (not beside the base that wrote them).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from generator.config.base import ConfigError
from generator.config.campaign import CampaignConfig, parse_config

EXTENDS = "extends"


def load_config(path) -> CampaignConfig:
    """Read and validate a campaign TOML file (its `extends` chain merged first)."""
    return parse_config(resolved_campaign(path), str(path))


def resolved_campaign(path) -> dict:
    """The campaign file at `path` as one dict: its `extends` chain merged, `extends` itself removed."""
    path = Path(path)
    files, layers = [path], [_read_toml(path)]
    while EXTENDS in layers[-1]:
        here, name = files[-1], layers[-1][EXTENDS]
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(
                f'{here}: extends must name a campaign file, such as extends = "base.toml" (relative to it)'
            )
        base = here.parent / name
        if base.resolve() in {f.resolve() for f in files}:
            loop = " -> ".join(str(f) for f in [*files, base])
            raise ConfigError(f"{path}: extends comes back to a file it passed ({loop}); remove one of the extends")
        files.append(base)
        layers.append(_read_toml(base))
    merged: dict = {}
    for layer in reversed(layers):
        merged = merge(merged, {k: v for k, v in layer.items() if k != EXTENDS})
    return merged


def merge(base: dict, over: dict) -> dict:
    """`over` on top of `base`: tables merge key by key; any other value replaces the base's."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such campaign file; give a path such as campaigns/quickstart.toml") from None
    except IsADirectoryError:
        raise ConfigError(
            f"{path}: is a folder, not a campaign file; give a TOML file such as campaigns/quickstart.toml"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not a text file (byte {exc.start} is not UTF-8); give a TOML campaign file such "
            "as campaigns/quickstart.toml"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the campaign file ({exc.strerror}); check the path and its permissions"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the syntax at that line") from None


def campaign_file(path) -> Path:
    """The campaign file at `path`; else, for `campaigns/NAME.toml`, the copy shipped inside the package."""
    path = Path(path)
    if not path.exists() and path.parent == Path("campaigns"):  # installed from a wheel, run outside a checkout
        from generator.resources import CAMPAIGNS_DIR

        shipped = CAMPAIGNS_DIR / path.name
        if shipped.is_file():
            return shipped
    return path
