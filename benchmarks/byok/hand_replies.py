"""Turn hand-written template replies (a1.md, a2.md, ... in a folder) into a replayable recording.

The replies were written by a person to show the pipeline, not by an LLM; the recording says so
(config.json: "written_by": "hand", and model "hand-written" on every exchange), and
`tunesmith template` labels every output that shows them as hand-written.

    python benchmarks/byok/hand_replies.py benchmarks/byok/replies/hand_matmul_naive_c matmul_naive_c
"""

import json
import sys
from pathlib import Path


def main(folder: str, kernel: str) -> None:
    folder = Path(folder)
    replies = sorted(folder.glob("a*.md"), key=lambda p: int(p.stem[1:]))
    (folder / "config.json").write_text(
        json.dumps(
            {
                "written_by": "hand",
                "kernel": kernel,
                "model": "hand-written",
                "note": "replies written by a person to show the pipeline; not an LLM's",
            },
            indent=1,
        )
        + "\n"
    )
    with open(folder / "exchanges.jsonl", "w") as fh:
        for i, path in enumerate(replies, 1):
            fh.write(
                json.dumps(
                    {
                        "id": f"h{i:04d}",
                        "purpose": "template:hand-written",
                        "model": "hand-written",
                        "messages": [],
                        "reply": path.read_text(),
                        "ref": f"template/{kernel}/a{i}",
                        "finish_reason": "stop",
                    }
                )
                + "\n"
            )


if __name__ == "__main__":
    main(*sys.argv[1:3])
