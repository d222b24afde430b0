# expect: ok|killed|exception
# Leaves a non-daemon thread running that keeps calling func after __call__ returned.
import threading


class LingeringThread:
    def __call__(self, func, searchspace):
        def pester():
            while True:
                try:
                    func(searchspace.get_random_sample(1)[0])
                except BaseException:
                    pass
        threading.Thread(target=pester).start()
        for cfg in searchspace.get_random_sample(5):
            try:
                func(cfg)
            except BaseException:
                pass
