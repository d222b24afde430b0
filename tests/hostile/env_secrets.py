# expect: exception
# Looks for an API key in its environment and in every /proc/*/environ and cmdline it can read.
import os


class EnvSecrets:
    def __call__(self, func, searchspace):
        found = [f"env:{k}" for k, v in os.environ.items() if "@@SECRET@@" in v or k == "OPENAI_API_KEY"]
        for pid in os.listdir("/proc"):
            for name in ("environ", "cmdline"):
                try:
                    with open(f"/proc/{pid}/{name}", "rb") as fh:
                        if b"@@SECRET@@" in fh.read():
                            found.append(f"/proc/{pid}/{name}")
                except OSError:
                    pass
        raise RuntimeError("LEAKED " + " ".join(found) if found else "no secret found")
