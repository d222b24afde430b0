# expect: timeout|killed|exception
# Forks without end; every child execs a uniquely named sleep so that the test can look for survivors.
import os


class ForkBomb:
    def __call__(self, func, searchspace):
        while True:
            try:
                if os.fork() == 0:
                    try:
                        os.execvp("sleep", ["sleep", "@@SLEEP@@"])
                    finally:
                        os._exit(0)
            except OSError:
                pass
